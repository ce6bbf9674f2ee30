import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { AckPolicy, StorageType } from '@nats-io/jetstream';
import { nanos } from '@nats-io/nats-core';
import { Objm } from '@nats-io/obj';
import {
  BaseServiceEnv,
  Bus,
  DURABLE,
  DURABLES,
  DURABLE_SUBJECT,
  EVENT,
  JetStreamNotProvisioned,
  LARGE_BUCKET_STREAM,
  RETIRED_DURABLES,
  STREAM_DEADLETTER,
  STREAM_EVENTS,
  createLogger,
  durablesOf,
  provisionJetStream,
  startService,
  type RunningService,
} from '@approvals/shared';
import { createTestDatabase, startTestNats, type TestDatabase, type TestNats } from '@approvals/shared/testing';

const log = createLogger('provisioning-test', 'silent');
const ROOT = join(__dirname, '..', '..');

/**
 * JetStream is provisioned in one step by an administrative user (the migrate step, npm
 * start, the launchers, the tests): the streams, the large-body bucket, every durable with
 * its declared subject, and no retired durable. A service with its own credentials never
 * makes any of it: it stops at start, saying so, when something is missing.
 */
describe('JetStream provisioning', () => {
  let pg: TestDatabase;
  let nats: TestNats | undefined;
  let buses: Bus[] = [];
  let running: RunningService[] = [];

  const admin = async () => {
    const bus = await Bus.connect({ url: nats!.url, name: 'provisioning-admin', log });
    buses.push(bus);
    return bus;
  };
  const consumerNames = async (bus: Bus) => {
    const names: string[] = [];
    for await (const c of (await bus.jsm()).consumers.list(STREAM_EVENTS)) names.push(c.name);
    return names.sort();
  };

  /** A service (the scheduler's name and user) that consumes its durable, on a database of the test's. */
  const scheduler = (
    natsAuth?: { user: string; pass: string },
    consume: { durable: string; filterSubject: string } = { durable: DURABLE.schedulerDecisionTimers, filterSubject: EVENT.decisionTimers },
  ) =>
    startService({
      name: 'scheduler',
      version: '0.0.0-test',
      config: BaseServiceEnv.parse({
        DATABASE_URL: pg.url,
        NATS_URL: natsAuth ? nats!.serviceUrl : nats!.url,
        NATS_USER: natsAuth?.user,
        NATS_PASSWORD: natsAuth?.pass,
      }),
      schema: `pv_${randomBytes(4).toString('hex')}`,
      migrations: [],
      log,
      setup: async (ctx) => ctx.consume({ ...consume, handler: async () => undefined }),
    }).then((svc) => {
      running.push(svc);
      return svc;
    });
  const schedulerUser = () => ({ user: nats!.users!.scheduler.user, pass: nats!.users!.scheduler.password });

  beforeAll(async () => {
    pg = await createTestDatabase('provisioning');
  });
  afterEach(async () => {
    for (const s of running) await s.stop().catch(() => undefined);
    running = [];
    for (const b of buses) await b.close();
    buses = [];
    await nats?.stop();
    nats = undefined;
  });
  afterAll(async () => {
    await pg?.drop();
  });

  it('makes the streams, the bucket (on file) and every durable with its declared subject and settings; no retired durable is left', async () => {
    nats = await startTestNats({ provision: false });
    const bus = await admin();
    const jsm = await bus.jsm();
    // Retired durables an earlier build left behind.
    const retired = Object.values(RETIRED_DURABLES).flat();
    expect(retired).toEqual(expect.arrayContaining(['gateway-audit', 'policies-decision-usage', 'surfaces-decision-created', 'scheduler-decision-created']));
    await jsm.streams.add({ name: STREAM_EVENTS, subjects: ['evt.>'] });
    for (const durable of retired) await jsm.consumers.add(STREAM_EVENTS, { durable_name: durable, ack_policy: AckPolicy.Explicit, filter_subject: 'evt.>' });

    await provisionJetStream(bus, { log });

    const streams: string[] = [];
    for await (const s of jsm.streams.list()) streams.push(s.config.name);
    expect(streams.sort()).toEqual([LARGE_BUCKET_STREAM, STREAM_DEADLETTER, STREAM_EVENTS].sort());
    expect((await jsm.streams.info(LARGE_BUCKET_STREAM)).config.storage).toBe(StorageType.File);
    // Exactly the declared durables: one per subject, each service's own (`<service>-…`).
    expect(await consumerNames(bus)).toEqual(Object.keys(DURABLE_SUBJECT).sort());
    for (const spec of DURABLES) {
      const { config } = await jsm.consumers.info(STREAM_EVENTS, spec.durable);
      expect(config).toMatchObject({ filter_subject: spec.filterSubject, ack_policy: AckPolicy.Explicit, max_deliver: 50, ack_wait: nanos(30_000) });
    }
    expect(durablesOf('policies')).toEqual([]);
    expect(durablesOf('surfaces').sort()).toEqual(['surfaces-decision-chat', 'surfaces-timer-retention']);
  });

  // The provisioning step may run from several places at once (a Job retried while the first
  // still runs; services provisioning for themselves, anonymous, on a bare server): on a
  // fresh server the stream adds race (nats-server 2.9 answers the loser "subjects overlap").
  it('may run from several processes at once, and again: what exists is brought up to date, not re-added', async () => {
    for (let round = 0; round < 3; round++) {
      nats = await startTestNats({ provision: false });
      const all = await Promise.all(Array.from({ length: 6 }, () => admin()));
      await Promise.all(all.map((b) => provisionJetStream(b, { log })));
      await Promise.all(all.map((b) => provisionJetStream(b, { log })));
      const names: string[] = [];
      for await (const s of (await all[0]!.jsm()).streams.list()) names.push(s.config.name);
      expect(names.sort()).toEqual([LARGE_BUCKET_STREAM, STREAM_DEADLETTER, STREAM_EVENTS].sort());
      expect(await consumerNames(all[0]!)).toEqual(Object.keys(DURABLE_SUBJECT).sort());
      for (const b of buses) await b.close();
      buses = [];
      await nats.stop();
      nats = undefined;
    }
  });

  it("brings a durable's settings up to date, replaces a bucket an earlier build made in memory, and refuses to re-filter a durable", async () => {
    nats = await startTestNats({ provision: false });
    const bus = await admin();
    const jsm = await bus.jsm();
    await new Objm(bus.js).create('bus-large', { ttl: nanos(600_000), storage: StorageType.Memory });
    await provisionJetStream(bus, { log, durables: [] });
    expect((await jsm.streams.info(LARGE_BUCKET_STREAM)).config.storage).toBe(StorageType.File);

    const durable = DURABLE.notifierDecisionCreated;
    await jsm.consumers.add(STREAM_EVENTS, { durable_name: durable, filter_subject: DURABLE_SUBJECT[durable], ack_policy: AckPolicy.Explicit, max_deliver: 5 });
    await provisionJetStream(bus, { log });
    expect((await jsm.consumers.info(STREAM_EVENTS, durable)).config.max_deliver).toBe(50);

    // A durable found taking another subject (what the review feared: re-filtered to read
    // every event) is not silently kept or changed: the provisioning stops and says why.
    await jsm.consumers.delete(STREAM_EVENTS, durable);
    await jsm.consumers.add(STREAM_EVENTS, { durable_name: durable, filter_subject: 'evt.>', ack_policy: AckPolicy.Explicit });
    const err = await provisionJetStream(bus, { log }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JetStreamNotProvisioned);
    expect(String((err as Error).message)).toMatch(new RegExp(`${durable} takes evt\\.>, declared ${DURABLE_SUBJECT[durable].replace(/\./g, '\\.')}`));
  });

  it('a service with its own credentials makes nothing: it stops at start naming the stream or durable that is missing', async () => {
    nats = await startTestNats({ provision: false });
    await expect(scheduler(schedulerUser())).rejects.toThrow(
      new RegExp(`stream ${STREAM_EVENTS} does not exist: JetStream is provisioned before the services start`),
    );
    const bus = await admin();
    await provisionJetStream(bus, { log, durables: [] });
    await expect(scheduler(schedulerUser())).rejects.toThrow(`the durable consumer ${DURABLE.schedulerDecisionTimers} does not exist on ${STREAM_EVENTS}`);
    // It created nothing on the way.
    expect(await consumerNames(bus)).toEqual([]);
    await provisionJetStream(bus, { log });
    await expect(scheduler(schedulerUser())).resolves.toMatchObject({ name: 'scheduler' });
  });

  it('a service process stops with exit code 1 and a line that says what to run', async () => {
    nats = await startTestNats({ provision: false });
    const child = spawn(process.execPath, [join(ROOT, 'services', 'scheduler', 'dist', 'main.js')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        DATABASE_URL: pg.url,
        NATS_URL: nats.serviceUrl,
        NATS_USER: nats.users!.scheduler.user,
        NATS_PASSWORD: nats.users!.scheduler.password,
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    const fatal = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .find((l) => l.level === 60);
    expect(fatal?.msg).toMatch(
      /the JetStream stream EVENTS does not exist: JetStream is provisioned before the services start, by an administrative NATS user: `<image> migrate`/,
    );
  });

  it('a service declares only its own durables, with the subject DURABLE_SUBJECT gives them', async () => {
    nats = await startTestNats();
    await expect(scheduler(schedulerUser(), { durable: DURABLE.schedulerDecisionTimers, filterSubject: 'evt.>' })).rejects.toThrow(
      `scheduler consumes ${DURABLE.schedulerDecisionTimers} with evt.>, declared in DURABLE_SUBJECT with ${EVENT.decisionTimers}`,
    );
    await expect(scheduler(schedulerUser(), { durable: DURABLE.notifierDecisionCreated, filterSubject: EVENT.decisionCreated })).rejects.toThrow(
      /not one of its durables/,
    );
  });

  it('anonymous (a bare nats-server in development), a service provisions JetStream itself at start', async () => {
    nats = await startTestNats({ auth: false, provision: false });
    await scheduler();
    const bus = await admin();
    expect(await consumerNames(bus)).toEqual(Object.keys(DURABLE_SUBJECT).sort());
  });
});
