import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { AppError, Bus, EchoEndpoints, createLogger } from '@approvals/shared';
import { createTestDatabase, startTestNats, waitFor, type TestDatabase, type TestNats } from '@approvals/shared/testing';

const ROOT = join(__dirname, '..', '..');
const SCHEDULER_MAIN = join(ROOT, 'services', 'scheduler', 'dist', 'main.js');
const log = createLogger('graceful-shutdown-test', 'silent');

interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function spawnScheduler(env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [SCHEDULER_MAIN], {
    cwd: ROOT,
    // Only what the process needs, so the test's own environment cannot hide a bad variable.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Resolves with the exit, or fails if the process is still running after `ms`. */
async function exitWithin(p: Proc, ms: number) {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p.exited,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`process did not exit within ${ms} ms; stderr:\n${p.stderr()}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe('graceful shutdown of a real service process', () => {
  let pg: TestDatabase;
  let nats: TestNats;
  let bus: Bus;
  const procs: Proc[] = [];

  const start = (env: Record<string, string>) => {
    const p = spawnScheduler(env);
    procs.push(p);
    return p;
  };

  beforeAll(async () => {
    expect(existsSync(SCHEDULER_MAIN)).toBe(true); // built by `npm test` before jest runs
    pg = await createTestDatabase('shutdown');
    nats = await startTestNats();
    bus = await Bus.connect({ url: nats.url, name: 'graceful-shutdown-test', log, requestTimeoutMs: 5000 });
  });

  afterEach(async () => {
    for (const p of procs.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill('SIGKILL');
        await p.exited;
      }
    }
  });

  afterAll(async () => {
    await bus?.close();
    await nats?.stop();
    await pg?.drop();
  });

  /** How many requests the service has received on its echo endpoint ($SRV.STATS). */
  const echoRequestsReceived = async (): Promise<number> => {
    const msg = await bus.nc.request('$SRV.STATS.scheduler', undefined, { timeout: 1000 });
    const stats = JSON.parse(new TextDecoder().decode(msg.data)) as { endpoints: { subject: string; num_requests: number }[] };
    return stats.endpoints.find((e) => e.subject === EchoEndpoints.scheduler.subject)?.num_requests ?? 0;
  };

  it('on SIGTERM answers the request in flight, then exits 0 and stops answering', async () => {
    const proc = start({ DATABASE_URL: pg.url, NATS_URL: nats.url, LOG_LEVEL: 'silent' });
    const ready = await waitFor(() => bus.call(EchoEndpoints.scheduler, { message: 'ready?' }, { timeoutMs: 1000 }), {
      timeoutMs: 30_000,
      what: `scheduler answering (stderr: ${proc.stderr()})`,
    });
    expect(ready.message).toBe('ready?');

    const before = await echoRequestsReceived();
    const started = Date.now();
    const inFlight = bus.call(EchoEndpoints.scheduler, { message: 'in flight', delayMs: 4000 }, { timeoutMs: 15_000 });
    let answered = false;
    void inFlight.finally(() => (answered = true)).catch(() => undefined);
    // SIGTERM as soon as the service holds the request (milliseconds, far inside the 4 s it
    // takes even on a busy machine), while it is still unanswered.
    await waitFor(async () => (await echoRequestsReceived()) > before, { timeoutMs: 5000, intervalMs: 10, what: 'request received' });
    expect(answered).toBe(false);
    proc.child.kill('SIGTERM');

    await expect(inFlight).resolves.toEqual({ message: 'in flight', instance: ready.instance });
    expect(Date.now() - started).toBeGreaterThanOrEqual(3900);
    const exit = await exitWithin(proc, 15_000);
    expect(exit).toEqual({ code: 0, signal: null });

    const after = await bus.call(EchoEndpoints.scheduler, { message: 'anyone?' }).catch((e: unknown) => e);
    expect(after).toBeInstanceOf(AppError);
    expect((after as AppError).code).toBe('unavailable');
  });

  it('refuses to start with a bad DATABASE_URL: exits 1 naming the variable', async () => {
    const proc = start({ DATABASE_URL: 'not-a-url', NATS_URL: nats.url, LOG_LEVEL: 'silent' });
    const exit = await exitWithin(proc, 15_000);
    expect(exit).toEqual({ code: 1, signal: null });
    expect(proc.stderr()).toContain('DATABASE_URL');
    // It never joined the bus.
    await expect(bus.call(EchoEndpoints.scheduler, { message: 'x' })).rejects.toMatchObject({ code: 'unavailable' });
  });

  it('refuses to start without DATABASE_URL at all', async () => {
    const proc = start({ NATS_URL: nats.url, LOG_LEVEL: 'silent' });
    const exit = await exitWithin(proc, 15_000);
    expect(exit).toEqual({ code: 1, signal: null });
    expect(proc.stderr()).toContain('DATABASE_URL');
  });
});
