import type { NotifierConfig } from '../config';
import { DeliveryError, postJson, type ChannelProvider, type EngineMessage, type Outbound } from './provider';
import { signStandardWebhook } from './standard-webhooks';

const noUrl = (engine: string) => `no URL configured for engine ${engine}`;

/**
 * Engine resumes and run starts. Every engine gets the same payload (the resolution, or
 * the run request); the event id is the idempotency key the receiver can use
 * (at-least-once delivery). Each provider only speaks its engine's protocol.
 */
export function engineProviders(config: NotifierConfig, outbound: Outbound): ChannelProvider[] {
  // Engine URLs come from the deployment's environment: trusted configuration.
  const http = outbound.trusted;
  const engines: Array<ChannelProvider<EngineMessage>> = [
    {
      channel: 'engineA',
      audience: 'engine',
      unavailable: () => (!config.ENGINE_A_URL || !config.ENGINE_A_EVENT_KEY ? noUrl('engineA') : null),
      async send(d) {
        const url = `${config.ENGINE_A_URL!.replace(/\/$/, '')}/e/${encodeURIComponent(config.ENGINE_A_EVENT_KEY!)}`;
        const name = d.kind === 'run' ? 'approval/run.requested' : 'approval/decision.resolved';
        await postJson(http, url, { name, id: d.eventId, data: d.payload });
        return { status: 'sent' };
      },
    },
    {
      channel: 'engineB',
      audience: 'engine',
      unavailable: () => (!config.ENGINE_B_URL ? noUrl('engineB') : null),
      async send(d) {
        const p = d.payload;
        const ns = `${config.ENGINE_B_URL!.replace(/\/$/, '')}/api/v1/namespaces/${encodeURIComponent(config.ENGINE_B_NAMESPACE)}`;
        if (d.kind === 'run') {
          // Start the workflow with the run id as its workflow id, so a repeat is refused by Temporal too.
          await postJson(http, `${ns}/workflows/${encodeURIComponent(String(p.runId))}`, { workflowType: { name: p.workflowId }, input: [p.input ?? {}], requestId: d.eventId }, { 'idempotency-key': d.eventId });
          return { status: 'sent' };
        }
        const url = `${ns}/workflows/${encodeURIComponent(String(p.externalRunId))}/signal/approval-resolved`;
        await postJson(http, url, { input: [p] }, { 'idempotency-key': d.eventId });
        return { status: 'sent' };
      },
    },
    {
      channel: 'trigger',
      audience: 'engine',
      unavailable: () => (!config.ENGINE_TRIGGER_URL ? noUrl('trigger') : null),
      async send(d) {
        const p = d.payload;
        const auth: Record<string, string> = config.ENGINE_TRIGGER_SECRET ? { authorization: `Bearer ${config.ENGINE_TRIGGER_SECRET}` } : {};
        if (d.kind === 'run') {
          await postJson(http, `${config.ENGINE_TRIGGER_URL!.replace(/\/$/, '')}/api/v1/tasks/${encodeURIComponent(String(p.workflowId))}/trigger`, { payload: p.input ?? {}, options: { idempotencyKey: d.eventId } }, { ...auth, 'idempotency-key': d.eventId });
          return { status: 'sent' };
        }
        const url = `${config.ENGINE_TRIGGER_URL!.replace(/\/$/, '')}/api/v1/waitpoints/tokens/${encodeURIComponent(String(p.stepRef))}/complete`;
        await postJson(http, url, { data: p }, { ...auth, 'idempotency-key': d.eventId });
        return { status: 'sent' };
      },
    },
    {
      channel: 'bundled',
      audience: 'engine',
      unavailable: () => (!config.ENGINE_BUNDLED_URL ? noUrl('bundled') : null),
      async send(d) {
        if (!config.ENGINE_BUNDLED_SECRET) throw new DeliveryError('ENGINE_BUNDLED_SECRET is not set: refusing to send an unsigned webhook', true);
        const body = JSON.stringify({ type: d.kind === 'run' ? 'run.requested' : 'decision.resolved', data: d.payload });
        const headers = signStandardWebhook(config.ENGINE_BUNDLED_SECRET, d.eventId, Math.floor(Date.now() / 1000), body);
        await postJson(http, config.ENGINE_BUNDLED_URL!, undefined, headers, body);
        return { status: 'sent' };
      },
    },
    // Decisions opened by agents (MCP) or plain API callers have no engine to resume: they poll.
  ];
  const polled = (channel: string, reason: string): ChannelProvider => ({ channel, audience: 'engine', unavailable: () => reason, send: async () => ({ status: 'skipped', reason }) });
  return [
    ...(engines as ChannelProvider[]),
    polled('mcp', 'mcp callers read the verdict with await_decision / check_decision'),
    // (runs are only started for registered workflows, whose engines are the four above)
    polled('api', 'api callers poll the decision'),
  ];
}
