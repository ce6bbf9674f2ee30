import { expect } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Client } from 'pg';
import { STREAM_EVENTS, type EventEnvelope } from '@approvals/shared';
import { natsConnectOptions, waitFor } from '@approvals/shared/testing';
import type { HttpResult, Stack } from '../../../test/helpers/stack';

export const SERVICES = ['gateway', 'policies', 'decisions'] as const;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Spec error body: `{error, message, ...details}` with the given status. */
export function expectError(res: HttpResult, status: number, error: string, details: Record<string, unknown> = {}) {
  expect({ status: res.status, error: res.body?.error }).toEqual({ status, error });
  expect(typeof res.body.message).toBe('string');
  expect(res.body.message.length).toBeGreaterThan(0);
  expect(res.body).toMatchObject(details);
}

/** A 400 from schema or responseSpec validation. */
export function expectInvalid(res: HttpResult, path?: string) {
  expect({ status: res.status, error: res.body?.error }).toEqual({ status: 400, error: 'invalid_request' });
  expect(Array.isArray(res.body.issues)).toBe(true);
  expect(res.body.issues.length).toBeGreaterThan(0);
  if (path) expect(res.body.issues.map((i: { path: string }) => i.path)).toContain(path);
}

let seq = 0;
export const uniq = (label: string) => `${label}-${Date.now().toString(36)}-${++seq}`;

/** Ad-hoc decision through the worker API; answers the new decision id. */
export async function openDecision(stack: Stack, apiKey: string, body: Record<string, unknown>): Promise<string> {
  const res = await stack.http('POST', '/v1/worker/decisions', {
    token: apiKey,
    body: { externalRunId: uniq('run'), stepRef: 'step-1', ...body },
  });
  expect({ status: res.status, reason: res.body?.reason }).toEqual({ status: 201, reason: 'created' });
  return res.body.decisionId as string;
}

export const decide = (stack: Stack, token: string, id: string, body: Record<string, unknown>) =>
  stack.http('POST', `/v1/decisions/${id}/decide`, { token, body });

/** Session read (tally, timeline, evidence). */
export async function readDecision(stack: Stack, token: string, id: string) {
  const res = await stack.http('GET', `/v1/decisions/${id}`, { token });
  expect(res.status).toBe(200);
  return res.body;
}

export const timelineTypes = (d: { timeline: Array<{ type: string }> }) => d.timeline.map((t) => t.type);
export const countType = (d: { timeline: Array<{ type: string }> }, type: string) => d.timeline.filter((t) => t.type === type).length;

/** Waits until the decisions service's outbox has published every committed event. */
export async function outboxDrained(stack: Stack) {
  const pg = new Client({ connectionString: stack.db.url });
  await pg.connect();
  try {
    await waitFor(
      async () => {
        const r = await pg.query('SELECT count(*)::int AS n FROM decisions.outbox WHERE sent_at IS NULL');
        return r.rows[0].n === 0;
      },
      { what: 'the decisions outbox to drain', timeoutMs: 15_000 },
    );
  } finally {
    await pg.end();
  }
}

/** Reads the EVENTS stream; remembers what it has read. */
export class StreamReader {
  private nc?: NatsConnection;
  private jsm?: JetStreamManager;
  private next = 0;
  readonly messages: Array<{ seq: number; subject: string; msgId: string | undefined; envelope: EventEnvelope }> = [];

  constructor(private readonly url: string) {}

  async open() {
    this.nc = await connect(natsConnectOptions(this.url));
    this.jsm = await jetstreamManager(this.nc);
    return this;
  }

  js() {
    return jetstream(this.nc!);
  }

  manager() {
    return this.jsm!;
  }

  async refresh() {
    const info = await this.jsm!.streams.info(STREAM_EVENTS);
    if (info.state.messages === 0) return this.messages;
    if (this.next < info.state.first_seq) this.next = info.state.first_seq;
    for (; this.next <= info.state.last_seq; this.next++) {
      const m = await this.jsm!.streams.getMessage(STREAM_EVENTS, { seq: this.next });
      if (!m) continue;
      this.messages.push({ seq: m.seq, subject: m.subject, msgId: m.header?.get('Nats-Msg-Id'), envelope: m.json<EventEnvelope>() });
    }
    return this.messages;
  }

  /** Events whose data.decisionId is the decision, in stream order (after the outbox drained). */
  async forDecision(stack: Stack, decisionId: string, subject?: string) {
    await outboxDrained(stack);
    await this.refresh();
    return this.messages.filter((m) => m.envelope.data?.decisionId === decisionId && (!subject || m.subject === subject));
  }

  async close() {
    await this.nc?.drain().catch(() => undefined);
  }
}
