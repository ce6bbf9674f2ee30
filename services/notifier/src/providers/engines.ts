import { randomUUID } from 'node:crypto';
import { expectOk, OutboundError, PROVIDER_LABEL, WORKFLOW_ENGINES, type Engine, type OutboundClient } from '@approvals/shared';
import { DeliveryError, postJson, type ChannelProvider, type EngineMessage } from './provider';
import { signStandardWebhook } from './standard-webhooks';

export type EngineName = Engine;
export const ENGINES: readonly EngineName[] = WORKFLOW_ENGINES;

/** Where an org's engine events go: its own settings, or the deployment's environment (INNGEST_*, TEMPORAL_*, TRIGGER_*, ENGINE_BUNDLED_*). */
export interface EngineTarget {
  engine: EngineName;
  source: 'org' | 'deployment';
  url: string;
  /** Inngest event key, Temporal API key, Trigger.dev secret key, bundled signing secret. */
  secret?: string;
  /** Temporal namespace. */
  namespace?: string;
  /** The guarded client for an org's URL; the trusted one for the deployment's. */
  http: OutboundClient;
}

export type ResolveEngine = (org: string, engine: EngineName) => Promise<EngineTarget | null>;

/** Why an engine's events cannot go anywhere for an org. */
export const engineNotConfigured = (engine: EngineName) =>
  `engine_not_configured: ${PROVIDER_LABEL[engine]} (${engine}) is not configured for this org or the deployment`;

const base = (u: string) => u.replace(/\/$/, '');
const bearer = (secret?: string): Record<string, string> => (secret ? { authorization: `Bearer ${secret}` } : {});

/**
 * One engine event: a decision's verdict (resume) or a run to start. Every engine gets the
 * same payload; the event id is the idempotency key the receiver dedupes on (at-least-once).
 */
export async function sendEngineEvent(t: EngineTarget, m: EngineMessage): Promise<void> {
  const p = m.payload;
  switch (t.engine) {
    case 'engineA': {
      if (!t.secret) throw new DeliveryError('Inngest has no event key', true);
      const name = m.kind === 'run' ? 'approval/run.requested' : 'approval/decision.resolved';
      await postJson(t.http, `${base(t.url)}/e/${encodeURIComponent(t.secret)}`, { name, id: m.eventId, data: p });
      return;
    }
    case 'engineB': {
      const ns = `${base(t.url)}/api/v1/namespaces/${encodeURIComponent(t.namespace ?? 'default')}`;
      const headers = { ...bearer(t.secret), 'idempotency-key': m.eventId };
      if (m.kind === 'run') {
        // The run id is the workflow id, so a repeat is refused by Temporal too.
        await postJson(
          t.http,
          `${ns}/workflows/${encodeURIComponent(String(p.runId))}`,
          {
            workflowType: { name: p.workflowId },
            input: [p.input ?? {}],
            requestId: m.eventId,
            ...(p.timeoutSec ? { workflowExecutionTimeout: `${p.timeoutSec}s` } : {}),
          },
          headers,
        );
        return;
      }
      await postJson(t.http, `${ns}/workflows/${encodeURIComponent(String(p.externalRunId))}/signal/approval-resolved`, { input: [p] }, headers);
      return;
    }
    case 'trigger': {
      const headers = { ...bearer(t.secret), 'idempotency-key': m.eventId };
      if (m.kind === 'run') {
        const options = { idempotencyKey: m.eventId, ...(p.timeoutSec ? { maxDuration: p.timeoutSec } : {}) };
        await postJson(t.http, `${base(t.url)}/api/v1/tasks/${encodeURIComponent(String(p.workflowId))}/trigger`, { payload: p.input ?? {}, options }, headers);
        return;
      }
      await postJson(t.http, `${base(t.url)}/api/v1/waitpoints/tokens/${encodeURIComponent(String(p.stepRef))}/complete`, { data: p }, headers);
      return;
    }
    case 'bundled': {
      if (!t.secret) throw new DeliveryError('the bundled engine has no signing secret: refusing to send an unsigned webhook', true);
      const body = JSON.stringify({ type: m.kind === 'run' ? 'run.requested' : 'decision.resolved', data: p });
      await postJson(t.http, t.url, undefined, signStandardWebhook(t.secret, m.eventId, Math.floor(Date.now() / 1000), body), body);
      return;
    }
  }
}

/**
 * A test event (`POST /v1/settings/engines/{engine}/test`): signed like a real one,
 * harmless to the receiver. Answers the receiver's HTTP status.
 */
export async function sendEngineTest(t: EngineTarget): Promise<{ ok: boolean; status: number | null; error?: string }> {
  const id = `test_${randomUUID()}`;
  const json = { 'content-type': 'application/json' };
  try {
    let res;
    switch (t.engine) {
      case 'engineA':
        res = await t.http.send(`${base(t.url)}/e/${encodeURIComponent(t.secret ?? '')}`, {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ name: 'approval/test', id, data: { test: true } }),
        });
        break;
      case 'engineB':
        // Describe the namespace: reachable, and the API key accepted.
        res = await t.http.send(`${base(t.url)}/api/v1/namespaces/${encodeURIComponent(t.namespace ?? 'default')}`, {
          method: 'GET',
          headers: bearer(t.secret),
        });
        break;
      case 'trigger':
        res = await t.http.send(`${base(t.url)}/api/v1/runs?page%5Bsize%5D=1`, { method: 'GET', headers: bearer(t.secret) });
        break;
      case 'bundled': {
        const body = JSON.stringify({ type: 'test', data: { test: true } });
        res = await t.http.send(t.url, {
          method: 'POST',
          headers: { ...json, ...signStandardWebhook(t.secret ?? '', id, Math.floor(Date.now() / 1000), body) },
          body,
        });
        break;
      }
    }
    try {
      expectOk(res, 'test');
      return { ok: true, status: res.status };
    } catch {
      return { ok: false, status: res.status };
    }
  } catch (err) {
    return { ok: false, status: null, error: err instanceof OutboundError ? err.message : (err as Error).message };
  }
}

/**
 * Engine channels. Nothing configured for the org or the deployment is a recorded skip
 * (and, for a resume, a timeline entry), found when the event is planned: no claim, no
 * attempt. The target is resolved per delivery at send time, so a change of an org's
 * settings applies to every delivery not yet sent (one whose engine was removed since it
 * was planned is skipped then).
 */
export function engineProviders(resolve: ResolveEngine, configured: (org: string, engine: EngineName) => Promise<boolean>): ChannelProvider[] {
  const engines: Array<ChannelProvider<EngineMessage>> = ENGINES.map((engine) => ({
    channel: engine,
    audience: 'engine' as const,
    unavailable: async (org: string) => ((await configured(org, engine)) ? null : engineNotConfigured(engine)),
    async send(m: EngineMessage) {
      const target = await resolve(m.org, engine);
      if (!target) return { status: 'skipped' as const, reason: engineNotConfigured(engine) };
      await sendEngineEvent(target, m);
      return { status: 'sent' as const };
    },
  }));
  const polled = (channel: string, reason: string): ChannelProvider => ({
    channel,
    audience: 'engine',
    unavailable: () => reason,
    send: async () => ({ status: 'skipped', reason }),
  });
  return [
    ...(engines as ChannelProvider[]),
    // Decisions opened by agents (MCP) or plain API callers have no engine to resume: they poll.
    polled('mcp', 'mcp callers read the verdict with await_decision / check_decision'),
    polled('api', 'api callers poll the decision'),
  ];
}
