import { z } from 'zod';

/**
 * Payloads (`data`) of domain events on the EVENTS stream. The envelope is
 * EventEnvelope. Consumers parse `data` with these schemas; a payload that does not
 * parse is poison (terminated and logged).
 */
export const DecisionPolicyRef = z.object({ key: z.string(), id: z.string(), version: z.number(), versionId: z.string() }).nullable();

export const DecisionCreatedData = z.object({
  decisionId: z.string(),
  policy: DecisionPolicyRef,
  approvers: z.array(z.string()),
  assigneeEmail: z.string().nullable(),
  externalRunId: z.string(),
  stepRef: z.string(),
  workflowRef: z.string().nullable(),
  engine: z.string(),
  title: z.string().nullable(),
  createdAt: z.string(),
  expiresAt: z.string().nullable(),
  timeoutSec: z.number().nullable(),
  route: z.object({ channels: z.array(z.string()), strategy: z.string().optional(), escalateAfterSec: z.number().optional() }).nullable(),
  requiresSignature: z.boolean(),
});
export type DecisionCreatedData = z.infer<typeof DecisionCreatedData>;

/** A notification (created, reminder, escalation) reached an approver's channel. */
export const NotificationSentData = z.object({
  decisionId: z.string(),
  deliveryId: z.string(),
  kind: z.enum(['notify', 'remind', 'escalate']),
  channel: z.string(),
  approver: z.string().nullable(),
  sentAt: z.string(),
});
export type NotificationSentData = z.infer<typeof NotificationSentData>;

export const DecisionResolvedData = z.object({
  decisionId: z.string(),
  policy: DecisionPolicyRef,
  status: z.enum(['APPROVED', 'REJECTED', 'EXPIRED']),
  decidedBy: z.string().nullable(),
  note: z.string().nullable(),
  resolvedAt: z.string(),
  externalRunId: z.string(),
  stepRef: z.string(),
  workflowRef: z.string().nullable(),
  engine: z.string(),
  responseValue: z.unknown().optional(),
  output: z.unknown().optional(),
  policyVersion: z.number().nullable(),
});
export type DecisionResolvedData = z.infer<typeof DecisionResolvedData>;

export const DecisionCancelledData = z.object({
  decisionId: z.string(),
  policy: DecisionPolicyRef,
  actor: z.string().nullable(),
  note: z.string().nullable(),
  cancelledAt: z.string(),
});
export type DecisionCancelledData = z.infer<typeof DecisionCancelledData>;

export const PolicyForceDeletedData = z.object({
  key: z.string(),
  policyId: z.string(),
  actor: z.string(),
  pending: z.number(),
  lastUsedAt: z.string().nullable(),
});
