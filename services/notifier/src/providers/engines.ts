import type { NotifierConfig } from '../config';
import { DeliveryError, postJson, type ChannelProvider, type DeliveryRow, type Outbound, type SendResult } from './provider';
import { signStandardWebhook } from './standard-webhooks';

/**
 * Engine resumes. Every engine gets the same payload; the event id of the resolution is
 * the idempotency key the receiver can use (at-least-once delivery).
 */
export function resumePayload(d: DeliveryRow): Record<string, unknown> {
  return d.payload;
}

const skipped = (engine: string): SendResult => ({ status: 'skipped', reason: `no URL configured for engine ${engine}` });

export function engineProviders(config: NotifierConfig, outbound: Outbound): ChannelProvider[] {
  // Engine URLs come from the deployment's environment: trusted configuration.
  const http = outbound.trusted;
  return [
    {
      channel: 'engineA',
      async send(d) {
        if (!config.ENGINE_A_URL || !config.ENGINE_A_EVENT_KEY) return skipped('engineA');
        const url = `${config.ENGINE_A_URL.replace(/\/$/, '')}/e/${encodeURIComponent(config.ENGINE_A_EVENT_KEY)}`;
        const name = d.kind === 'run' ? 'approval/run.requested' : 'approval/decision.resolved';
        await postJson(http, url, { name, id: d.event_id, data: resumePayload(d) });
        return { status: 'sent' };
      },
    },
    {
      channel: 'engineB',
      async send(d) {
        if (!config.ENGINE_B_URL) return skipped('engineB');
        const p = resumePayload(d);
        const ns = `${config.ENGINE_B_URL.replace(/\/$/, '')}/api/v1/namespaces/${encodeURIComponent(config.ENGINE_B_NAMESPACE)}`;
        if (d.kind === 'run') {
          // Start the workflow with the run id as its workflow id, so a repeat is refused by Temporal too.
          await postJson(http, `${ns}/workflows/${encodeURIComponent(String(p.runId))}`, { workflowType: { name: p.workflowId }, input: [p.input ?? {}], requestId: d.event_id }, { 'idempotency-key': d.event_id });
          return { status: 'sent' };
        }
        const url = `${ns}/workflows/${encodeURIComponent(String(p.externalRunId))}/signal/approval-resolved`;
        await postJson(http, url, { input: [p] }, { 'idempotency-key': d.event_id });
        return { status: 'sent' };
      },
    },
    {
      channel: 'trigger',
      async send(d) {
        if (!config.ENGINE_TRIGGER_URL) return skipped('trigger');
        const p = resumePayload(d);
        const auth: Record<string, string> = config.ENGINE_TRIGGER_SECRET ? { authorization: `Bearer ${config.ENGINE_TRIGGER_SECRET}` } : {};
        if (d.kind === 'run') {
          await postJson(http, `${config.ENGINE_TRIGGER_URL.replace(/\/$/, '')}/api/v1/tasks/${encodeURIComponent(String(p.workflowId))}/trigger`, { payload: p.input ?? {}, options: { idempotencyKey: d.event_id } }, { ...auth, 'idempotency-key': d.event_id });
          return { status: 'sent' };
        }
        const url = `${config.ENGINE_TRIGGER_URL.replace(/\/$/, '')}/api/v1/waitpoints/tokens/${encodeURIComponent(String(p.stepRef))}/complete`;
        await postJson(http, url, { data: p }, { ...auth, 'idempotency-key': d.event_id });
        return { status: 'sent' };
      },
    },
    {
      channel: 'bundled',
      async send(d) {
        if (!config.ENGINE_BUNDLED_URL) return skipped('bundled');
        if (!config.ENGINE_BUNDLED_SECRET) throw new DeliveryError('ENGINE_BUNDLED_SECRET is not set: refusing to send an unsigned webhook', true);
        const body = JSON.stringify({ type: d.kind === 'run' ? 'run.requested' : 'decision.resolved', data: resumePayload(d) });
        const headers = signStandardWebhook(config.ENGINE_BUNDLED_SECRET, d.event_id, Math.floor(Date.now() / 1000), body);
        await postJson(http, config.ENGINE_BUNDLED_URL, undefined, headers, body);
        return { status: 'sent' };
      },
    },
    // Decisions opened by agents (MCP) or plain API callers have no engine to resume: they poll.
    { channel: 'mcp', send: async () => ({ status: 'skipped', reason: 'mcp callers read the verdict with await_decision / check_decision' }) },
    // (runs are only started for registered workflows, whose engines are the four above)
    { channel: 'api', send: async () => ({ status: 'skipped', reason: 'api callers poll the decision' }) },
  ];
}
