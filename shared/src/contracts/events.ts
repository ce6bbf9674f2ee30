import { z } from 'zod';
import { EVENT, type EventSubject } from '../subjects';
import type { EventEnvelope } from './common';
import { RouteStrategy } from './policies';

/**
 * Payloads (`data`) of domain events on the EVENTS stream, one schema per subject
 * (EVENT_DATA below). The envelope is EventEnvelope. Producers are type-checked against
 * these and validated when the event is written to the outbox; consumers validate at
 * receipt, and a message that does not parse goes to the dead-letter stream.
 */
export const DecisionPolicyRef = z.object({ key: z.string(), id: z.string(), version: z.number(), versionId: z.string() }).nullable();

/** A policy's delivery route, as fixed on the decision at creation. */
export const DecisionRoute = z.object({ channels: z.array(z.string()), strategy: RouteStrategy.optional(), escalateAfterSec: z.number().optional() });
export type DecisionRoute = z.infer<typeof DecisionRoute>;

/** Share of the timeout after which those yet to answer are reminded once. */
export const REMIND_AT = 0.75;

/** One timed step of a decision: its expiry, the reminder, or escalation step n (1-based) onto the route's next channel. */
export const PlannedStep = z.object({
  kind: z.enum(['expire', 'remind', 'escalate']),
  step: z.number().int().min(0),
  dueAt: z.string(),
  /** escalate: the route's channel this step moves to (each person is reached on their next channel of the route). */
  channel: z.string().optional(),
});
export type PlannedStep = z.infer<typeof PlannedStep>;

/**
 * A decision's escalation plan, computed once by the decisions service when it opens the
 * decision (`escalationPlanOf`) and carried in `evt.decision.created`: the scheduler arms
 * its steps, the notifier reads its strategy. Nobody else decides when or how a decision
 * escalates.
 */
export const EscalationPlan = z.object({ strategy: RouteStrategy, steps: z.array(PlannedStep) });
export type EscalationPlan = z.infer<typeof EscalationPlan>;

/**
 * The plan of a decision created at `createdAt`: expiry at expiresAt; one reminder at
 * REMIND_AT of timeoutSec; with an `escalate` route, one step per further channel every
 * escalateAfterSec, each before the expiry (the expiry ends the decision anyway).
 */
export function escalationPlanOf(d: {
  createdAt: Date | string;
  expiresAt: Date | string | null;
  timeoutSec: number | null;
  route: DecisionRoute | null;
}): EscalationPlan {
  const steps: PlannedStep[] = [];
  const created = new Date(d.createdAt).getTime();
  const expires = d.expiresAt === null ? null : new Date(d.expiresAt).getTime();
  if (expires !== null) {
    steps.push({ kind: 'expire', step: 0, dueAt: new Date(expires).toISOString() });
    if (d.timeoutSec) steps.push({ kind: 'remind', step: 0, dueAt: new Date(created + Math.round(d.timeoutSec * 1000 * REMIND_AT)).toISOString() });
  }
  const route = d.route;
  const strategy = route?.strategy ?? 'fanout';
  if (strategy === 'escalate' && route?.escalateAfterSec && route.channels.length > 1) {
    for (let step = 1; step < route.channels.length; step++) {
      const due = created + step * route.escalateAfterSec * 1000;
      if (expires !== null && due >= expires) break;
      steps.push({ kind: 'escalate', step, dueAt: new Date(due).toISOString(), channel: route.channels[step] });
    }
  }
  return { strategy, steps };
}

const DecisionCreatedFields = z.object({
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
  route: DecisionRoute.nullable(),
  plan: EscalationPlan,
  requiresSignature: z.boolean(),
  /** Who opened it: the actor id (an API key or a user id), and how people read it. */
  requestedBy: z.string().nullable().optional(),
  requestedByLabel: z.string().nullable().optional(),
});
/**
 * evt.decision.created. The decisions service always writes `plan`; an event written
 * before the plan was carried (a rolling upgrade) gets it at receipt, from the same
 * function that computes it at creation.
 */
export const DecisionCreatedData = DecisionCreatedFields.extend({ plan: EscalationPlan.optional() }).transform((d) => ({
  ...d,
  plan: d.plan ?? escalationPlanOf(d),
}));
export type DecisionCreatedData = z.output<typeof DecisionCreatedData>;

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

/** A delivery the notifier could not make at all (an engine resume with no engine configured): the timeline says why. */
export const NotificationSkippedData = z.object({
  decisionId: z.string(),
  deliveryId: z.string(),
  kind: z.enum(['notify', 'remind', 'escalate', 'resume']),
  channel: z.string(),
  reason: z.string(),
  at: z.string(),
});

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
  actorLabel: z.string().nullable().optional(),
  pending: z.number(),
  lastUsedAt: z.string().nullable(),
});

/** A version of a policy, as the audit log names it. */
const PolicyVersionRef = z.object({ version: z.number(), versionId: z.string(), contentHash: z.string() });
const LabelChange = z.object({ before: z.string().nullable(), after: z.string().nullable() });

/** `evt.policy.changed`: a policy created, changed, restored or archived (the forced archive is `evt.policy.force_deleted`). */
export const PolicyChangedData = z.object({
  key: z.string(),
  policyId: z.string(),
  change: z.enum(['created', 'updated', 'restored', 'archived']),
  actor: z.string().nullable(),
  actorLabel: z.string().nullable(),
  source: z.enum(['dashboard', 'api', 'repository']),
  /** The version before (null when created) and after (null when archived), with content hashes. */
  before: PolicyVersionRef.nullable(),
  after: PolicyVersionRef.nullable(),
  labels: z.object({ name: LabelChange, description: LabelChange }).optional(),
});
export type PolicyChangedData = z.infer<typeof PolicyChangedData>;

export const DecisionVoteRecordedData = z.object({
  decisionId: z.string(),
  voter: z.string(),
  choice: z.enum(['approve', 'reject']),
  surface: z.string(),
  tally: z.object({ approvals: z.number(), rejections: z.number(), approvalsRequired: z.number(), rejectionsRequired: z.number() }),
  policy: DecisionPolicyRef,
});

/**
 * `evt.decision.chat`: a decision event a chat installation follows, carried whole
 * (`event`: its subject, `of`: its id, `data`: its payload). The decisions service
 * publishes it next to the event itself, only for orgs with a chat installation, so the
 * surfaces service receives nothing for the orgs that have none.
 */
export const DecisionChatData = z.discriminatedUnion('event', [
  z.object({ event: z.literal(EVENT.decisionCreated), of: z.string(), data: DecisionCreatedData }),
  z.object({ event: z.literal(EVENT.decisionVoteRecorded), of: z.string(), data: DecisionVoteRecordedData }),
  z.object({ event: z.literal(EVENT.decisionResolved), of: z.string(), data: DecisionResolvedData }),
  z.object({ event: z.literal(EVENT.decisionCancelled), of: z.string(), data: DecisionCancelledData }),
]);
export type DecisionChatData = z.infer<typeof DecisionChatData>;
/** The subjects `evt.decision.chat` carries. */
export const CHAT_FOLLOWED: ReadonlySet<string> = new Set<string>(DecisionChatData.options.map((o) => o.shape.event.value));

/**
 * `evt.decision.timers`: a decision event the scheduler follows (created, resolved,
 * cancelled), carried whole (`event`: its subject, `data`: its payload). The decisions
 * service writes it next to the event itself, only for a decision that has timers
 * (`decisionHasTimers`), so the scheduler receives nothing for decisions that wait
 * indefinitely (docs/architecture.md "Timers follow a decision").
 */
export const DecisionTimersData = z.discriminatedUnion('event', [
  z.object({ event: z.literal(EVENT.decisionCreated), data: DecisionCreatedData }),
  z.object({ event: z.literal(EVENT.decisionResolved), data: DecisionResolvedData }),
  z.object({ event: z.literal(EVENT.decisionCancelled), data: DecisionCancelledData }),
]);
export type DecisionTimersData = z.infer<typeof DecisionTimersData>;

/** Whether a decision has timers for the scheduler: its plan has a step. A decision without any is never seen by it. */
export function decisionHasTimers(plan: EscalationPlan): boolean {
  return plan.steps.length > 0;
}

/**
 * What a workflow engine receives on resume and a caller's callback carries as `data`:
 * one payload for every end (APPROVED, REJECTED, EXPIRED, CANCELLED). `approved` only for
 * APPROVED, so the other ends take the rejection branch.
 */
export const ResumePayload = z.object({
  decisionId: z.string(),
  externalRunId: z.string(),
  stepRef: z.string(),
  workflowRef: z.string().nullable(),
  status: z.enum(['APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED']),
  approved: z.boolean(),
  decidedBy: z.string().nullable(),
  note: z.string().nullable(),
  responseValue: z.unknown(),
  output: z.unknown(),
  policyVersion: z.number().nullable(),
});
export type ResumePayload = z.infer<typeof ResumePayload>;

/**
 * The resume payload of a decision's end: a resolved one's evt.decision.resolved, or a
 * cancelled one's facts (no answer, no output). `approved` is derived here, only here.
 */
export function resumePayloadOf(
  d: Pick<DecisionResolvedData, 'decisionId' | 'externalRunId' | 'stepRef' | 'workflowRef' | 'decidedBy' | 'note' | 'policyVersion'> & {
    status: ResumePayload['status'];
    responseValue?: unknown;
    output?: unknown;
  },
): ResumePayload {
  return {
    decisionId: d.decisionId,
    externalRunId: d.externalRunId,
    stepRef: d.stepRef,
    workflowRef: d.workflowRef,
    status: d.status,
    approved: d.status === 'APPROVED',
    decidedBy: d.decidedBy,
    note: d.note,
    responseValue: d.responseValue ?? null,
    output: d.output ?? null,
    policyVersion: d.policyVersion,
  };
}

/**
 * `evt.decision.callback`: a decision opened with a `callbackUrl` ended. The decisions
 * service writes it next to evt.decision.resolved or evt.decision.cancelled, only for
 * such decisions; the notifier POSTs `{type: "decision.resolved", data: payload}` to
 * `url`, signed with the org's callback secret, its `webhook-id` this event's id.
 */
export const DecisionCallbackData = z.object({
  decisionId: z.string(),
  url: z.string(),
  payload: ResumePayload,
});
export type DecisionCallbackData = z.infer<typeof DecisionCallbackData>;

/**
 * `evt.notification.callback`: one attempt to deliver a decision's callback, sent (a 2xx) or
 * failed (`status`: the receiver's answer, null when none came; `final`: no retry
 * follows). The decision's timeline records each as `callback_sent` or `callback_failed`.
 */
export const CallbackAttemptedData = z.object({
  decisionId: z.string(),
  deliveryId: z.string(),
  attempt: z.number().int().positive(),
  url: z.string(),
  outcome: z.enum(['sent', 'failed']),
  status: z.number().int().nullable(),
  error: z.string().nullable(),
  final: z.boolean(),
  at: z.string(),
});
export type CallbackAttemptedData = z.infer<typeof CallbackAttemptedData>;

export const DecisionVoteRefusedData = z.object({
  decisionId: z.string(),
  actor: z.string(),
  choice: z.enum(['approve', 'reject']),
  reason: z.string(),
  policy: DecisionPolicyRef,
});

export const DecisionConsumedData = z.object({
  decisionId: z.string(),
  consumer: z.string(),
  factsHash: z.string().nullable(),
  consumedAt: z.string(),
  policy: DecisionPolicyRef,
});

export const DecisionEvidenceAddedData = z.object({ decisionId: z.string(), evidenceId: z.string(), kind: z.string(), actor: z.string().nullable() });

/** A reminder (about 75% of the timeout) for the people still to answer. */
export const DecisionRemindedData = z.object({
  decisionId: z.string(),
  to: z.array(z.string()),
  title: z.string().nullable(),
  expiresAt: z.string().nullable(),
  policy: DecisionPolicyRef,
  route: DecisionRoute.nullable(),
});

/** Escalation step n (1-based) of an `escalate` route: each person yet to vote, on their next channel. */
export const DecisionEscalatedData = z.object({
  decisionId: z.string(),
  step: z.number().int().positive(),
  to: z.array(z.string()),
  title: z.string().nullable(),
  policy: DecisionPolicyRef,
  route: DecisionRoute.nullable(),
});

/** An approver was disabled (by an admin, or by the identity provider: a leaver) or enabled again. */
export const ApproverStateData = z.object({
  approverId: z.string(),
  email: z.string(),
  reason: z.string(),
  actor: z.string().nullable().optional(),
  actorLabel: z.string().nullable().optional(),
});

/** One channel or signature method of an approver, as it stood. */
const EndpointState = z.object({ endpoint: z.string().nullable(), status: z.enum(['pending', 'verified', 'failed']) }).nullable();

/**
 * `evt.approver.changed`: an approver registered or changed.
 * - `registered` / `updated`: the record, or channels and methods it did not have (pending).
 * - `endpoint_set`: a channel endpoint or a method's ref set or verified by an admin for
 *   someone else (proof-and-reach.md section 6); `mailNotice` asks the notifier to tell the
 *   approver by mail.
 * - `learned`: a signature provider told us the approver's user id (an envelope they completed).
 */
export const ApproverChangedData = z.object({
  approverId: z.string(),
  email: z.string(),
  change: z.enum(['registered', 'updated', 'endpoint_set', 'learned']),
  actor: z.string().nullable(),
  actorLabel: z.string().nullable(),
  channel: z.string().optional(),
  surface: z.string().optional(),
  before: EndpointState.optional(),
  after: EndpointState.optional(),
  added: z.array(z.string()).optional(),
  mailNotice: z.boolean().optional(),
});
export type ApproverChangedData = z.infer<typeof ApproverChangedData>;

/** `evt.approver.settings_changed`: the domains approvers may come from, before and after. */
export const ApproverSettingsChangedData = z.object({
  actor: z.string().nullable(),
  actorLabel: z.string().nullable(),
  before: z.object({ allowedApproverDomains: z.array(z.string()) }),
  after: z.object({ allowedApproverDomains: z.array(z.string()) }),
});

/**
 * `evt.settings.changed`: an org setting changed where it is kept (the notifier's engines,
 * the surfaces service's signature provider and chat integrations), for the audit log.
 * `before`/`after` never hold a secret: only whether one is set.
 */
export const SettingsChangedData = z.object({
  kind: z.string(),
  actor: z.string().nullable(),
  actorLabel: z.string().nullable(),
  before: z.unknown().optional(),
  after: z.unknown().optional(),
});

/**
 * A person linked their own chat account to their approver record (proven by the
 * provider's sign-in, or Slack's directory under their verified email), or unlinked it
 * (`endpoint` null). `actor` is the person's email: only they can do it.
 */
export const ApproverChatLinkData = z.object({
  approverId: z.string(),
  email: z.string(),
  channel: z.enum(['chatA', 'chatB']),
  endpoint: z.string().nullable(),
  previousEndpoint: z.string().nullable(),
  via: z.enum(['slack_sign_in', 'slack_email', 'discord_sign_in', 'unlink']),
  actor: z.string(),
  /** The approver record was registered by this link. */
  registered: z.boolean(),
});

/** A timer the scheduler fired. */
export const TimerDueData = z.object({
  decisionId: z.string(),
  timerId: z.string(),
  kind: z.enum(['expire', 'remind', 'escalate', 'retention']),
  step: z.number().int(),
  dueAt: z.string(),
});

export const RunRequestedData = z.object({
  runId: z.string(),
  workflowId: z.string(),
  engine: z.string(),
  input: z.record(z.string(), z.unknown()),
  timeoutSec: z.number().nullable(),
});

/**
 * The one schema of each event subject. Renaming a subject is a migration (see
 * subjects.ts); changing a payload is a contract change: add fields as optional first.
 */
export const EVENT_DATA = {
  [EVENT.decisionCreated]: DecisionCreatedData,
  [EVENT.decisionVoteRecorded]: DecisionVoteRecordedData,
  [EVENT.decisionVoteRefused]: DecisionVoteRefusedData,
  [EVENT.decisionResolved]: DecisionResolvedData,
  [EVENT.decisionCancelled]: DecisionCancelledData,
  [EVENT.decisionConsumed]: DecisionConsumedData,
  [EVENT.decisionEvidenceAdded]: DecisionEvidenceAddedData,
  [EVENT.decisionReminded]: DecisionRemindedData,
  [EVENT.decisionEscalated]: DecisionEscalatedData,
  [EVENT.decisionChat]: DecisionChatData,
  [EVENT.decisionTimers]: DecisionTimersData,
  [EVENT.decisionCallback]: DecisionCallbackData,
  [EVENT.policyForceDeleted]: PolicyForceDeletedData,
  [EVENT.policyChanged]: PolicyChangedData,
  [EVENT.approverDisabled]: ApproverStateData,
  [EVENT.approverEnabled]: ApproverStateData,
  [EVENT.approverChanged]: ApproverChangedData,
  [EVENT.approverSettingsChanged]: ApproverSettingsChangedData,
  [EVENT.settingsChanged]: SettingsChangedData,
  [EVENT.approverChatLinkChanged]: ApproverChatLinkData,
  [EVENT.timerExpireDue]: TimerDueData,
  [EVENT.timerRemindDue]: TimerDueData,
  [EVENT.timerEscalateDue]: TimerDueData,
  [EVENT.timerRetentionDue]: TimerDueData,
  [EVENT.runRequested]: RunRequestedData,
  [EVENT.notificationSent]: NotificationSentData,
  [EVENT.notificationSkipped]: NotificationSkippedData,
  [EVENT.callbackAttempted]: CallbackAttemptedData,
  [EVENT.test]: z.record(z.string(), z.unknown()),
} as const satisfies Record<EventSubject, z.ZodType>;

export type EventData<S extends EventSubject> = z.output<(typeof EVENT_DATA)[S]>;

/** An event as a consumer receives it: the envelope with its payload typed by subject. */
export type DomainEvent<S extends EventSubject = EventSubject> = {
  [K in S]: Omit<EventEnvelope, 'type' | 'data'> & { type: K; data: EventData<K> };
}[S];

/** An event as a producer writes it (to its outbox). */
/** An event to write; `traceparent`: the trace it continues (default: the current span's). */
export type NewEvent<S extends EventSubject = EventSubject> =
  | {
      [K in S]: { subject: K; org: string; data: z.input<(typeof EVENT_DATA)[K]>; id?: string; occurredAt?: Date; traceparent?: string };
    }[S]
  | { subject: `evt.test.${string}`; org: string; data: Record<string, unknown>; id?: string; occurredAt?: Date; traceparent?: string };

/** Subjects under `evt.test.` carry anything: they exist for the bus's own tests. */
const TEST_PREFIX = 'evt.test.';

/** The schema of a subject's payload, or undefined for a subject nobody defined. */
export function eventSchemaOf(subject: string): z.ZodType | undefined {
  if (Object.prototype.hasOwnProperty.call(EVENT_DATA, subject)) return EVENT_DATA[subject as EventSubject];
  return subject.startsWith(TEST_PREFIX) ? EVENT_DATA[EVENT.test] : undefined;
}
