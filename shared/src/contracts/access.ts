import { z } from 'zod';
import { SUBJECT } from '../subjects';
import { EchoReply, EchoRequest } from './common';
import { READ, RESENDABLE, endpoint } from './endpoint';

export const ActorLabelRequest = z.object({ org: z.string(), ref: z.string() });
export const ActorLabelReply = z.object({
  found: z.boolean(),
  kind: z.enum(['user', 'apiKey']).optional(),
  label: z.string().optional(),
  email: z.string().optional(),
});

export const LlmSettingsRequest = z.object({ org: z.string() });
/**
 * Internal only (decisions, for refine). The model API key travels sealed
 * (SecretBox, context `llm-api-key:<org>`): only the decisions service opens it.
 */
export const LlmSettingsReply = z.object({
  configured: z.boolean(),
  baseUrl: z.string().optional(),
  model: z.string().optional(),
  apiKeySealed: z.string().optional(),
});

/** The SecretBox context of an org's model API key. */
export const llmKeyContext = (org: string) => `llm-api-key:${org}`;

export const RetentionSettingsReply = z.object({ orgs: z.array(z.object({ org: z.string(), decisionDataDays: z.number().nullable() })) });

export const AccessEndpoints = {
  retentionSettings: endpoint(SUBJECT.access.retentionSettings, z.object({}), RetentionSettingsReply, READ),
  llmSettings: endpoint(SUBJECT.access.llmSettings, LlmSettingsRequest, LlmSettingsReply, READ),
  echo: endpoint(SUBJECT.access.echo, EchoRequest, EchoReply, READ),
  actorLabel: endpoint(SUBJECT.access.actorLabel, ActorLabelRequest, ActorLabelReply, READ),
  /** The identity provider created or renamed an org. */
  upsertOrg: endpoint(
    SUBJECT.access.upsertOrg,
    z.object({ org: z.string().min(1).max(200), name: z.string().max(500).nullable() }),
    z.object({ org: z.string(), created: z.boolean() }),
    RESENDABLE,
  ),
};

/** Echo endpoints of every service, for health detail and replica tests. */
export const EchoEndpoints = {
  gateway: AccessEndpoints.echo,
  decisions: endpoint(SUBJECT.decisions.echo, EchoRequest, EchoReply, READ),
  policies: endpoint(SUBJECT.policies.echo, EchoRequest, EchoReply, READ),
  notifier: endpoint(SUBJECT.notifier.echo, EchoRequest, EchoReply, READ),
  surfaces: endpoint(SUBJECT.surfaces.echo, EchoRequest, EchoReply, READ),
  scheduler: endpoint(SUBJECT.scheduler.echo, EchoRequest, EchoReply, READ),
};
