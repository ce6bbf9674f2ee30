import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import {
  BaseServiceEnv,
  AppError,
  Bus,
  EchoEndpoints,
  SILENCE_MS,
  busResendsTotal,
  encodeJson,
  createLogger,
  endpoint,
  startService,
  withStatus,
  type RunningService,
  type ServiceContext,
} from '@approvals/shared';
import { createTestDatabase, startTestNats, waitFor, type TestDatabase, type TestNats } from '@approvals/shared/testing';
import { headers } from '@nats-io/nats-core';
import { ServiceErrorCodeHeader } from '@nats-io/services';

const log = createLogger('service-host-test', 'silent');

// Test endpoints under the scheduler's own subject prefix.
const FailEndpoint = endpoint(
  'svc.scheduler.test_fail',
  z.object({ mode: z.enum(['app', 'crash', 'ok', 'created', 'bad_reply']) }),
  z.object({ ok: z.literal(true), n: z.number() }),
);
const StrictEndpoint = endpoint('svc.scheduler.test_strict', z.object({ count: z.number().int().min(1), name: z.string() }), z.object({ echoed: z.string() }));
/** The same subject as StrictEndpoint, with a schema loose enough to send what the server refuses. */
const LooseStrictEndpoint = endpoint(StrictEndpoint.subject, z.unknown(), z.unknown());
const NobodyEndpoint = endpoint('svc.nobody.echo', z.object({}), z.object({}));
/** Echoes a big string back `times` times: replies far over NATS's 1 MiB max_payload. */
const BigEndpoint = endpoint(
  'svc.scheduler.test_big',
  z.object({ text: z.string(), times: z.number().int() }),
  z.object({ parts: z.array(z.string()), length: z.number() }),
);

function setupTestEndpoints(ctx: ServiceContext) {
  ctx.host.handle(FailEndpoint, async (req) => {
    switch (req.mode) {
      case 'app':
        throw new AppError('conflict', 'the thing is in use', { thingId: 'thg_1', holders: ['a', 'b'] });
      case 'crash':
        throw new Error('secret internal detail');
      case 'created':
        return withStatus(201, { ok: true as const, n: 2 });
      case 'bad_reply':
        return { ok: true as const, n: 'not a number' as unknown as number };
      default:
        return { ok: true as const, n: 1 };
    }
  });
  ctx.host.handle(StrictEndpoint, async (req) => ({ echoed: `${req.name}x${req.count}` }));
  ctx.host.handle(BigEndpoint, async (req) => ({ parts: Array.from({ length: req.times }, () => req.text), length: req.text.length }));
}

describe('startService + ServiceHost request/reply (real NATS and Postgres)', () => {
  let pg: TestDatabase;
  let nats: TestNats;
  let client: Bus;
  let running: RunningService[] = [];
  /** Replicas "killed" by closing their NATS connection: what else they hold is closed after the test. */
  let killed: RunningService[] = [];

  const start = (schema: string) =>
    startService({
      name: 'scheduler',
      version: '0.0.0-test',
      config: BaseServiceEnv.parse({ DATABASE_URL: pg.url, NATS_URL: nats.url }),
      schema,
      migrations: [],
      log,
      setup: async (ctx) => setupTestEndpoints(ctx),
    }).then((svc) => {
      running.push(svc);
      return svc;
    });

  const freshSchema = () => `sh_${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    pg = await createTestDatabase('svchost');
    nats = await startTestNats();
    client = await Bus.connect({ url: nats.url, name: 'service-host-test-client', log, requestTimeoutMs: 5000 });
  });

  afterEach(async () => {
    await Promise.all(running.map((s) => s.stop()));
    running = [];
    // Their pools of database connections kept the test's process alive after the run.
    await Promise.all(killed.map((s) => s.ctx.db.destroy()));
    killed = [];
  });

  afterAll(async () => {
    await client?.close();
    await nats?.stop();
    await pg?.drop();
  });

  it('a replica killed holding requests: idempotent ones are resent once and answered by the survivor; others fail fast with timeout', async () => {
    const schema = freshSchema();
    const [a, b] = await Promise.all([start(schema), start(schema)]);
    // The same subject without the idempotent flag, to show what a non-idempotent call gets.
    const OnceOnly = endpoint(EchoEndpoints.scheduler.subject, EchoEndpoints.scheduler.request, EchoEndpoints.scheduler.reply);
    expect(EchoEndpoints.scheduler.idempotent).toBe(true);
    const idem = Array.from({ length: 12 }, (_, i) => client.call(EchoEndpoints.scheduler, { message: `i${i}`, delayMs: 600 }, { timeoutMs: 1500 }));
    const once = Array.from({ length: 12 }, (_, i) => client.call(OnceOnly, { message: `o${i}`, delayMs: 600 }, { timeoutMs: 1500 }).catch((e: unknown) => e));
    // Let the requests reach both replicas, then kill A as SIGKILL would: its connection
    // goes without draining and its answers never leave.
    await new Promise((r) => setTimeout(r, 150));
    await a.ctx.bus.nc.close();
    running = running.filter((s) => s !== a);
    killed.push(a);

    const answered = await Promise.all(idem);
    answered.forEach((r, i) => expect(r.message).toBe(`i${i}`));
    // A died before any of its answers were due: every answer is B's, including those A held.
    expect(answered.every((r) => r.instance === b.ctx.host.instanceId)).toBe(true);
    const onceResults = await Promise.all(once);
    const lost = onceResults.filter((r) => r instanceof AppError);
    expect(lost.length).toBeGreaterThan(0);
    for (const e of lost) expect((e as AppError).code).toBe('timeout');
    // Every idempotent request was answered although A held some of them: those went out twice.
    expect(lost.length).toBeLessThan(12);
  });

  /** Resends of the echo endpoint so far, by reason. */
  const resends = async (reason: string) =>
    (await busResendsTotal.get()).values
      .filter((v) => v.labels.subject === EchoEndpoints.scheduler.subject && v.labels.reason === reason)
      .reduce((n, v) => n + v.value, 0);

  it('a replica killed holding resendable requests goes silent: they are resent then, not when the wait runs out, and the survivor answers', async () => {
    const schema = freshSchema();
    const [a, b] = await Promise.all([start(schema), start(schema)]);
    const before = { silent: await resends('silent'), timeout: await resends('timeout') };
    // Each is worked on for twice the silence that gives a dead replica away, and the caller
    // would wait ten times that for an answer.
    const idem = Array.from({ length: 12 }, (_, i) =>
      client.call(EchoEndpoints.scheduler, { message: `s${i}`, delayMs: 2 * SILENCE_MS }, { timeoutMs: 20 * SILENCE_MS }),
    );
    await new Promise((r) => setTimeout(r, 300));
    // Killed as SIGKILL would: its connection goes without draining, nothing more leaves it.
    await a.ctx.bus.nc.close();
    running = running.filter((s) => s !== a);
    killed.push(a);

    const answered = await Promise.all(idem);
    answered.forEach((r, i) => expect(r.message).toBe(`s${i}`));
    expect(answered.every((r) => r.instance === b.ctx.host.instanceId)).toBe(true);
    // Resent because A fell silent: those A held, and only those (B said it was working on its own).
    const silent = (await resends('silent')) - before.silent;
    expect(silent).toBeGreaterThan(0);
    expect(silent).toBeLessThan(12);
    expect(await resends('timeout')).toBe(before.timeout);
  });

  it('a request worked on longer than that silence is sent once: its replica says it is working on it; a wait that runs out is a timeout, not a second send', async () => {
    const schema = freshSchema();
    await Promise.all([start(schema), start(schema)]);
    const total = async () => (await resends('silent')) + (await resends('timeout')) + (await resends('no_responders'));
    const before = await total();
    const slow = await Promise.all(
      Array.from({ length: 6 }, (_, i) => client.call(EchoEndpoints.scheduler, { message: `w${i}`, delayMs: 2 * SILENCE_MS }, { timeoutMs: 20 * SILENCE_MS })),
    );
    expect(slow.map((r) => r.message)).toEqual(['w0', 'w1', 'w2', 'w3', 'w4', 'w5']);
    expect(await total()).toBe(before);

    // Slower than the caller's wait, yet alive: the caller gives up once (504 at the gateway)
    // instead of doubling the work of a replica that is only slow.
    const late = await client
      .call(EchoEndpoints.scheduler, { message: 'late', delayMs: 4 * SILENCE_MS }, { timeoutMs: 2 * SILENCE_MS })
      .catch((e: unknown) => e);
    expect(late).toBeInstanceOf(AppError);
    expect(late).toMatchObject({ code: 'timeout' });
    expect(await total()).toBe(before);
  });

  it("after a resend, an error answer from the silent first holder does not hide the resend's success", async () => {
    const b = await start(freshSchema());
    // A: a member of the same queue group that says nothing while it holds a request (a
    // stalled replica), leaves the group when it gets one, and answers with a transient
    // error only once the request was resent.
    const before = await resends('silent');
    let held = 0;
    const a = client.nc.subscribe(EchoEndpoints.scheduler.subject, {
      queue: 'scheduler',
      callback: (_err, msg) => {
        held++;
        a.unsubscribe();
        void (async () => {
          await waitFor(async () => (await resends('silent')) > before, { what: 'the resend' });
          const h = headers();
          h.set(ServiceErrorCodeHeader, '503');
          msg.respond(encodeJson({ ok: false, error: { code: 'unavailable', message: 'stalled', details: {} } }), { headers: h });
        })();
      },
    });
    await client.nc.flush();
    // Until one request lands on A (the group picks a member at random).
    let reply: { message: string; instance: string } | undefined;
    for (let i = 0; held === 0; i++)
      reply = await client.call(EchoEndpoints.scheduler, { message: `r${i}`, delayMs: 2 * SILENCE_MS }, { timeoutMs: 20 * SILENCE_MS });
    expect(reply).toMatchObject({ instance: b.ctx.host.instanceId });
    expect((await resends('silent')) - before).toBe(1);
  });

  it('two replicas with the same name share the requests (queue group)', async () => {
    const schema = freshSchema();
    // Started together, as a supervisor or an orchestrator would: both run migrations at once.
    const started = await Promise.allSettled([start(schema), start(schema)]);
    expect(started.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(['ok', 'ok']);
    const [a, b] = started.map((r) => (r as PromiseFulfilledResult<RunningService>).value);
    expect(a.ctx.host.instanceId).not.toBe(b.ctx.host.instanceId);

    const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => client.call(EchoEndpoints.scheduler, { message: `m${i}` })));
    replies.forEach((r, i) => expect(r.message).toBe(`m${i}`));
    const instances = new Set(replies.map((r) => r.instance));
    expect(instances).toEqual(new Set([a.ctx.host.instanceId, b.ctx.host.instanceId]));
  });

  it('a stopped replica leaves the group: the other one answers everything', async () => {
    const schema = freshSchema();
    const a = await start(schema);
    const b = await start(schema);
    await a.stop();
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => client.call(EchoEndpoints.scheduler, { message: `m${i}` })));
    expect(new Set(replies.map((r) => r.instance))).toEqual(new Set([b.ctx.host.instanceId]));
  });

  it('carries requests and replies larger than max_payload through the object store, and leaves nothing behind', async () => {
    await start(freshSchema());
    const text = 'x'.repeat(1_500_000) + 'é'; // over 1 MiB on its own
    const reply = await client.call(BigEndpoint, { text, times: 3 }, { timeoutMs: 20_000 });
    expect(reply.length).toBe(text.length);
    expect(reply.parts).toHaveLength(3);
    expect(reply.parts.every((p) => p === text)).toBe(true);
    // small messages still go inline, and the service keeps answering
    expect((await client.call(StrictEndpoint, { count: 2, name: 'n' })).echoed).toBe('nx2');
    // every large body was read once and deleted
    const { Objm } = await import('@nats-io/obj');
    const os = await new Objm(client.nc).open('bus-large');
    const left: string[] = [];
    for (const info of await os.list()) if (!info.deleted) left.push(info.name);
    expect(left).toEqual([]);
  });

  it('an AppError thrown in a handler reaches the caller as an AppError with the same code, message and details', async () => {
    await start(freshSchema());
    const err = await client.call(FailEndpoint, { mode: 'app' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'conflict', message: 'the thing is in use', details: { thingId: 'thg_1', holders: ['a', 'b'] } });
    expect((err as AppError).status).toBe(409);
  });

  it('an unknown exception becomes internal with an errorId, without leaking its message', async () => {
    await start(freshSchema());
    const err = (await client.call(FailEndpoint, { mode: 'crash' }).catch((e: unknown) => e)) as AppError;
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe('internal');
    expect(err.details.errorId).toEqual(expect.stringMatching(/^err_[0-9A-Z]{26}$/));
    expect(err.message).not.toContain('secret internal detail');
    expect(JSON.stringify(err.details)).not.toContain('secret internal detail');
  });

  it('answers a request that fails the server-side schema with invalid_request and the issues', async () => {
    await start(freshSchema());
    const err = (await client.call(LooseStrictEndpoint, { count: 0, name: 42 }).catch((e: unknown) => e)) as AppError;
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe('invalid_request');
    const issues = err.details.issues as { path: string; message: string }[];
    expect(issues.map((i) => i.path).sort()).toEqual(['count', 'name']);
    for (const i of issues) expect(typeof i.message).toBe('string');
    // The same endpoint answers a valid request.
    expect(await client.call(LooseStrictEndpoint, { count: 2, name: 'n' })).toEqual({ echoed: 'nx2' });
  });

  it('answers bytes that are not JSON with invalid_request', async () => {
    await start(freshSchema());
    const msg = await client.nc.request(StrictEndpoint.subject, new TextEncoder().encode('{not json'), { timeout: 5000 });
    expect(JSON.parse(new TextDecoder().decode(msg.data))).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
  });

  it('the caller validates its own request before sending it', async () => {
    await start(freshSchema());
    const err = (await client.call(StrictEndpoint, { count: 0, name: 'x' }).catch((e: unknown) => e)) as AppError;
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe('invalid_request');
    expect(err.details.issues).toEqual([expect.objectContaining({ path: 'count' })]);
  });

  it('carries an explicit success status, and refuses a reply that breaks the contract', async () => {
    await start(freshSchema());
    expect(await client.request(FailEndpoint, { mode: 'ok' })).toEqual({ status: undefined, data: { ok: true, n: 1 } });
    expect(await client.request(FailEndpoint, { mode: 'created' })).toEqual({ status: 201, data: { ok: true, n: 2 } });
    const err = (await client.call(FailEndpoint, { mode: 'bad_reply' }).catch((e: unknown) => e)) as AppError;
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe('internal');
  });

  it('a subject nobody serves raises unavailable', async () => {
    const err = (await client.call(NobodyEndpoint, {}).catch((e: unknown) => e)) as AppError;
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe('unavailable');
    expect(err.transient).toBe(true);
  });

  it('a reply slower than the timeout raises timeout', async () => {
    await start(freshSchema());
    const err = (await client.call(EchoEndpoints.scheduler, { message: 'slow', delayMs: 1000 }, { timeoutMs: 200 }).catch((e: unknown) => e)) as AppError;
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe('timeout');
  });

  it('follows the services conventions: error replies carry Nats-Service-Error headers; $SRV.STATS shows real latency and errors', async () => {
    const svc = await start(freshSchema());
    // An error reply: headers with the HTTP-style code and the message, and our JSON body.
    const raw = await client.nc.request(FailEndpoint.subject, new TextEncoder().encode(JSON.stringify({ mode: 'app' })), { timeout: 2000 });
    expect(raw.headers?.get('Nats-Service-Error-Code')).toBe('409');
    expect(raw.headers?.get('Nats-Service-Error')).toBe('conflict: the thing is in use');
    expect(JSON.parse(new TextDecoder().decode(raw.data))).toMatchObject({ ok: false, error: { code: 'conflict' } });
    // A success carries no error header.
    const fine = await client.nc.request(FailEndpoint.subject, new TextEncoder().encode(JSON.stringify({ mode: 'ok' })), { timeout: 2000 });
    expect(fine.headers?.get('Nats-Service-Error-Code') ?? '').toBe('');

    await client.call(EchoEndpoints.scheduler, { message: 'slow', delayMs: 300 });
    const stats = await client.nc.request(`$SRV.STATS.scheduler.${svc.ctx.host.serviceId}`, undefined, { timeout: 1000 });
    const body = JSON.parse(new TextDecoder().decode(stats.data)) as {
      endpoints: { subject: string; num_requests: number; num_errors: number; processing_time: number; average_processing_time: number; last_error?: string }[];
    };
    const echo = body.endpoints.find((e) => e.subject === EchoEndpoints.scheduler.subject)!;
    expect(echo.num_requests).toBe(1);
    // nanoseconds: the 300 ms the handler took, not the ~0 ms of its synchronous start
    expect(echo.processing_time).toBeGreaterThanOrEqual(250_000_000);
    expect(echo.average_processing_time).toBeGreaterThanOrEqual(250_000_000);
    const fail = body.endpoints.find((e) => e.subject === FailEndpoint.subject)!;
    expect(fail).toMatchObject({ num_requests: 2, num_errors: 1, last_error: 'conflict: the thing is in use' });
  });

  it('stop() lets a request in flight finish and answer', async () => {
    const svc = await start(freshSchema());
    const pending = client.call(EchoEndpoints.scheduler, { message: 'in flight', delayMs: 500 });
    // Make sure the request has reached the handler before stopping.
    await new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 5000;
      const check = async () => {
        const stats = await client.nc.request(`$SRV.STATS.scheduler.${svc.ctx.host.serviceId}`, undefined, { timeout: 1000 });
        const body = JSON.parse(new TextDecoder().decode(stats.data)) as { endpoints: { subject: string; num_requests: number }[] };
        const echo = body.endpoints.find((e) => e.subject === EchoEndpoints.scheduler.subject);
        if (echo && echo.num_requests >= 1) return resolve();
        if (Date.now() > deadline) return reject(new Error('request never reached the service'));
        setTimeout(check, 20);
      };
      void check();
    });
    await svc.stop();
    await expect(pending).resolves.toEqual({ message: 'in flight', instance: svc.ctx.host.instanceId });
    await expect(client.call(EchoEndpoints.scheduler, { message: 'after' })).rejects.toMatchObject({ code: 'unavailable' });
  });
});
