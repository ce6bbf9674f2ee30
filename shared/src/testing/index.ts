import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropDatabase, ensureDatabase } from '../infra/postgres';
import { startNatsServer } from '../infra/nats';

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
  const name = `${label.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(0, 20)}_${randomBytes(5).toString('hex')}`;
  const admin = adminUrl ?? testAdminUrl();
  const url = await ensureDatabase(admin, name);
  return { url, name, drop: () => dropDatabase(admin, name) };
}

export interface TestNats {
  url: string;
  stop(): Promise<void>;
  /** Stops and restarts the server on the same port and store (a NATS outage). */
  restart?(): Promise<void>;
}

/** A NATS server of its own for one test file: no subject or stream is shared between files. */
export async function startTestNats(): Promise<TestNats> {
  if (process.env.TEST_INFRA === 'containers') {
    const { GenericContainer, Wait } = await import('testcontainers');
    const c = await new GenericContainer('nats:2.10-alpine').withCommand(['-js']).withExposedPorts(4222).withWaitStrategy(Wait.forLogMessage(/Server is ready/)).start();
    return { url: `nats://${c.getHost()}:${c.getMappedPort(4222)}`, stop: async () => void (await c.stop()) };
  }
  const dir = mkdtempSync(join(tmpdir(), 'approvals-test-nats-'));
  const nats = await startNatsServer({ storeDir: dir });
  return {
    url: nats.url,
    stop: async () => {
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
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
