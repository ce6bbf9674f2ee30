import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropDatabase, ensureDatabase } from '../infra/postgres';
import { generateNatsUsers, startNatsServer, type NatsUsers } from '../infra/nats';
import type { JetStreamManager } from '@nats-io/jetstream';
import { Bus, splitNatsUrl } from '../bus/bus';
import { provisionJetStream } from '../bus/jetstream';
import { createLogger } from '../logger';
import { STREAM_EVENTS } from '../subjects';
import type { EventEnvelope } from '../contracts/common';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export function testAdminUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: run the suite with `npm test`');
  return url;
}

/** A database of its own for one test file, dropped at the end. */
export async function createTestDatabase(label = 't', adminUrl?: string): Promise<TestDatabase> {
  const name = `${label
    .replace(/[^a-z0-9]/gi, '')
    .toLowerCase()
    .slice(0, 20)}_${randomBytes(5).toString('hex')}`;
  const admin = adminUrl ?? testAdminUrl();
  const url = await ensureDatabase(admin, name);
  return { url, name, drop: () => dropDatabase(admin, name) };
}

export interface TestNats {
  /** The server with admin credentials in it (`nats://admin:…@host:port`): for the test's own clients. */
  url: string;
  /** The server's address without credentials: services connect with their own users. */
  serviceUrl: string;
  /** Every service's user (and admin), when the server requires authorization. */
  users?: NatsUsers;
  stop(): Promise<void>;
  /** Stops and restarts the server on the same port and store (a NATS outage). */
  restart?(): Promise<void>;
}

/**
 * A NATS server of its own for one test file: no subject or stream is shared between
 * files. It requires authorization with the same per-service users and permissions as
 * `npm start`, so every test exercises them (`auth: false` for a bare server), and is
 * provisioned as `npm start` leaves it: the streams, the bucket and every service's
 * durables, made by the admin user (`provision: false` for an empty one).
 */
export async function startTestNats(opts: { auth?: boolean; provision?: boolean } = {}): Promise<TestNats> {
  let nats: TestNats;
  if (process.env.TEST_INFRA === 'containers') {
    const { GenericContainer, Wait } = await import('testcontainers');
    const c = await new GenericContainer('nats:2.10-alpine')
      .withCommand(['-js'])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start();
    const url = `nats://${c.getHost()}:${c.getMappedPort(4222)}`;
    nats = { url, serviceUrl: url, stop: async () => void (await c.stop()) };
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'approvals-test-nats-'));
    const users = opts.auth === false ? undefined : generateNatsUsers();
    const server = await startNatsServer({ storeDir: join(dir, 'store'), users });
    const admin = users ? `${encodeURIComponent(users.admin.user)}:${encodeURIComponent(users.admin.password)}@` : '';
    nats = {
      url: server.url.replace('nats://', `nats://${admin}`),
      serviceUrl: server.url,
      users,
      stop: async () => {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (opts.provision !== false) {
    try {
      const bus = await Bus.connect({ url: nats.url, name: 'test-provisioning', log: createLogger('test-provisioning', 'silent') });
      try {
        await provisionJetStream(bus, { log: createLogger('test-provisioning', 'silent') });
      } finally {
        await bus.close();
      }
    } catch (err) {
      await nats.stop();
      throw err;
    }
  }
  return nats;
}

/** Options for `connect()` from `@nats-io/transport-node` for a URL that may carry credentials. */
export function natsConnectOptions(url: string): { servers: string; user?: string; pass?: string } {
  const { servers, user, pass } = splitNatsUrl(url);
  return { servers, ...(user ? { user, pass } : {}) };
}

/** Polls until `fn` returns a truthy value (or does not throw), or fails after the timeout. */
export async function waitFor<T>(fn: () => Promise<T> | T, opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${opts.what ?? 'condition'}${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
  }
}

/** A message stored on a stream, as tests read it back. */
export interface StoredEvent {
  seq: number;
  subject: string;
  /** The Nats-Msg-Id it was published with (the duplicate window's key). */
  msgId: string | undefined;
  envelope: EventEnvelope;
  /** When the stream stored it. */
  storedAt: Date;
}

/**
 * Every message a stream holds (from sequence `fromSeq` on, when given), in stream order,
 * read message by message from the stream's leader (a hundred requests at a time). No
 * consumer is made: with a node of a cluster down, one may be placed on it and never answer.
 */
export async function storedEvents(jsm: JetStreamManager, stream = STREAM_EVENTS, fromSeq = 0): Promise<StoredEvent[]> {
  const { state } = await jsm.streams.info(stream);
  if (state.messages === 0) return [];
  const out: StoredEvent[] = [];
  for (let from = Math.max(state.first_seq, fromSeq); from <= state.last_seq; from += 100) {
    const seqs = Array.from({ length: Math.min(100, state.last_seq - from + 1) }, (_, i) => from + i);
    // A sequence deleted from the stream answers an error: skipped.
    const got = await Promise.all(seqs.map((seq) => jsm.streams.getMessage(stream, { seq }).catch(() => null)));
    for (const m of got)
      if (m) out.push({ seq: m.seq, subject: m.subject, msgId: m.header?.get('Nats-Msg-Id'), envelope: m.json<EventEnvelope>(), storedAt: m.time });
  }
  return out;
}
