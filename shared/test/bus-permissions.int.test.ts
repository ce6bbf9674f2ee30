import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import {
  ApproversEndpoints,
  Bus,
  DURABLE,
  DURABLE_SUBJECT,
  DecisionsEndpoints,
  EVENT,
  EchoEndpoints,
  JETSTREAM_ADMIN_SUBJECTS,
  LARGE_BUCKET_STREAM,
  SERVICE_NAMES,
  STREAM_DEADLETTER,
  STREAM_EVENTS,
  SUBJECT,
  callersOf,
  createLogger,
  durablesOf,
  encodeJson,
  inboxPrefixOf,
  natsAuthorizationConfig,
  natsPermissionsOf,
  newId,
  subjectsOverlap,
  type EventEnvelope,
  type ServiceName,
} from '@approvals/shared';
import type { NatsUsers } from '@approvals/shared/infra';
import { startStack, type Stack } from '../../test/helpers/stack';

const log = createLogger('perm-test', 'silent');

/**
 * Every service connects as its own NATS user with permissions derived from BUS_ROLES.
 * A credential taken from one service must not let its holder act as another.
 */
describe('the bus: per-service NATS users and permissions', () => {
  let stack: Stack;
  let users: NatsUsers;
  const opened: Array<{ close(): Promise<void> }> = [];

  beforeAll(async () => {
    stack = await startStack({ label: 'busperm', services: ['gateway', 'policies', 'decisions', 'surfaces'] });
    users = stack.nats.users!;
    expect(users).toBeDefined();
  });
  afterAll(async () => {
    for (const c of opened) await c.close().catch(() => undefined);
    await stack?.stop();
  });

  const as = async (name: keyof NatsUsers): Promise<Bus> => {
    const bus = await Bus.connect({
      url: stack.nats.serviceUrl,
      name: `as-${name}`,
      log,
      auth: { user: users[name].user, pass: users[name].password },
      requestTimeoutMs: 2000,
    });
    opened.push(bus);
    return bus;
  };
  const vote = { org: 'org_x', decisionId: 'dec_x', voterEmail: 'ceo@example.com', surface: 'email' as const, decision: 'approve' as const };

  it('refuses a client without credentials, or with wrong ones', async () => {
    await expect(connect({ servers: stack.nats.serviceUrl, reconnect: false })).rejects.toThrow(/Authorization/i);
    await expect(connect({ servers: stack.nats.serviceUrl, user: 'notifier', pass: 'guessed', reconnect: false })).rejects.toThrow(/Authorization/i);
  });

  it("the notifier's credentials cannot cast a vote or read an org's model key", async () => {
    const notifier = await as('notifier');
    await expect(notifier.call(DecisionsEndpoints.surfaceVote, vote)).rejects.toThrow(/[Pp]ermission/);
    const raw = notifier.nc;
    await expect(raw.request(SUBJECT.access.llmSettings, JSON.stringify({ org: 'org_x' }), { timeout: 2000 })).rejects.toThrow(/[Pp]ermission/);
  });

  it('the public gateway cannot call internal subjects (vote as anyone, peek, resolve)', async () => {
    const gateway = await as('gateway');
    for (const subject of [SUBJECT.decisions.surfaceVote, SUBJECT.decisions.peek, SUBJECT.policies.resolve]) {
      await expect(gateway.nc.request(subject, '{}', { timeout: 2000 })).rejects.toThrow(/[Pp]ermission/);
    }
  });

  it("only the surfaces service may set a person's proven chat account on their approver record", async () => {
    const unlink = { org: 'org_x', email: 'nobody@example.com', channel: 'chatA' as const, endpoint: null, via: 'unlink' as const };
    for (const name of ['gateway', 'notifier'] as const) {
      const other = await as(name);
      await expect(other.nc.request(SUBJECT.approvers.linkChat, JSON.stringify(unlink), { timeout: 2000 })).rejects.toThrow(/[Pp]ermission/);
    }
    // From surfaces the request reaches the policies service (no such approver: nothing to unlink).
    await expect((await as('surfaces')).call(ApproversEndpoints.linkChat, unlink)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('the surfaces service may cast surface votes (the decisions service answers it)', async () => {
    const surfaces = await as('surfaces');
    // An unknown decision: the point is that the request reaches the decisions service.
    await expect(surfaces.call(DecisionsEndpoints.surfaceVote, vote)).rejects.toMatchObject({ code: 'not_found' });
  });

  it("a service cannot impersonate another (serve its subjects) or read another's replies", async () => {
    const nc: NatsConnection = await connect({ servers: stack.nats.serviceUrl, user: users.notifier.user, pass: users.notifier.password, reconnect: false });
    opened.push({ close: () => nc.close() });
    const drain = async (subject: string) => {
      const sub = nc.subscribe(subject);
      try {
        for await (const _ of sub) return 'received a message';
        return 'closed';
      } catch (err) {
        return String((err as Error).message);
      }
    };
    await expect(drain(SUBJECT.decisions.create)).resolves.toMatch(/Permissions Violation for Subscription to "svc.decisions.create"/);
    await expect(drain(`${inboxPrefixOf('decisions')}.>`)).resolves.toMatch(/Permissions Violation for Subscription/);
    await expect(drain('_INBOX.>')).resolves.toMatch(/Permissions Violation for Subscription/);
  });

  it("the decisions service may listen for decisions' ends (its long-poll waiters wake on them); another service may not", async () => {
    expect(natsPermissionsOf('decisions').subscribe.allow).toEqual(expect.arrayContaining([EVENT.decisionResolved, EVENT.decisionCancelled]));
    const listen = async (name: 'decisions' | 'notifier') => {
      const nc: NatsConnection = await connect({ servers: stack.nats.serviceUrl, user: users[name].user, pass: users[name].password, reconnect: false });
      opened.push({ close: () => nc.close() });
      const sub = nc.subscribe(EVENT.decisionResolved);
      const refused = (async () => {
        try {
          for await (const _ of sub) return 'received a message';
          return 'closed';
        } catch (err) {
          return String((err as Error).message);
        }
      })();
      await nc.flush();
      // A refused subscription is told at once; an allowed one just waits for messages.
      return Promise.race([refused, new Promise<string>((r) => setTimeout(() => r('listening'), 1000))]);
    };
    await expect(listen('decisions')).resolves.toBe('listening');
    await expect(listen('notifier')).resolves.toMatch(/Permissions Violation for Subscription/);
  });

  it('a service answers only those who may ask it: it cannot publish into the inbox of a service that never calls it', async () => {
    // The scheduler calls nothing: no service's inbox is the scheduler's to write to, but
    // the gateway's (its health check pings every service).
    const scheduler = await as('scheduler');
    await expect(scheduler.nc.request(`${inboxPrefixOf(users.decisions.user)}.forged`, '{}', { timeout: 2000 })).rejects.toThrow(/[Pp]ermission/);
    // The notifier calls the policies service but is never called by it: the policies' inbox is not its to write to.
    const notifier = await as('notifier');
    await expect(notifier.nc.request(`${inboxPrefixOf(users.policies.user)}.forged`, '{}', { timeout: 2000 })).rejects.toThrow(/[Pp]ermission/);
  });

  it("every service answers the operators' tools: the admin with its own inbox prefix, and a plain client's default inbox", async () => {
    const admin = await Bus.connect({
      url: stack.nats.serviceUrl,
      name: 'as-admin',
      log,
      auth: { user: users.admin.user, pass: users.admin.password },
      requestTimeoutMs: 2000,
    });
    opened.push(admin);
    const raw: NatsConnection = await connect({ servers: stack.nats.serviceUrl, user: users.admin.user, pass: users.admin.password, reconnect: false });
    opened.push({ close: () => raw.close() });
    for (const nc of [admin.nc, raw]) {
      for (const name of ['gateway', 'policies', 'decisions', 'surfaces']) {
        // Each service's discovery endpoint, answered by the service to the asker's inbox.
        const reply = await nc.request(`$SRV.PING.${name}`, '', { timeout: 2000 });
        expect(JSON.parse(new TextDecoder().decode(reply.data))).toMatchObject({ name, type: 'io.nats.micro.v1.ping_response' });
      }
    }
  });

  it("the gateway's health check is answered by every service, the gateway itself too", async () => {
    const gateway = await as('gateway');
    for (const name of ['gateway', 'policies', 'decisions', 'surfaces']) {
      const reply = await gateway.nc.request(`$SRV.PING.${name}`, '', { timeout: 2000 });
      expect(JSON.parse(new TextDecoder().decode(reply.data))).toMatchObject({ name });
    }
  });

  it('answers are granted to the inboxes of callers, never tracked by the server (no allow_responses)', () => {
    expect(subjectsOverlap('svc.decisions.>', 'svc.decisions.create')).toBe(true);
    expect(subjectsOverlap('svc.policies.resolve', 'svc.policies.>')).toBe(true);
    expect(subjectsOverlap('svc.*.peek', 'svc.decisions.peek')).toBe(true);
    expect(subjectsOverlap('svc.decisions.>', 'svc.decisions')).toBe(false);
    expect(subjectsOverlap('svc.decisions.peek', 'svc.policies.>')).toBe(false);
    expect(callersOf('decisions').sort()).toEqual(['gateway', 'notifier', 'policies', 'surfaces']);
    expect(callersOf('scheduler')).toEqual(['gateway']);
    const decisions = natsPermissionsOf('decisions', users).publish.allow;
    for (const caller of ['gateway', 'policies', 'notifier', 'surfaces'] as const) expect(decisions).toContain(`${inboxPrefixOf(users[caller].user)}.>`);
    expect(decisions).not.toContain(`${inboxPrefixOf(users.scheduler.user)}.>`);
    // Its own: the gateway's health check pings every service, the gateway too.
    expect(decisions).toContain(`${inboxPrefixOf(users.decisions.user)}.>`);
    expect(decisions).toContain(`${inboxPrefixOf(users.admin.user)}.>`);
    expect(natsPermissionsOf('scheduler', users).publish.allow.filter((s) => s.includes('INBOX'))).toEqual([
      `${inboxPrefixOf(users.gateway.user)}.>`,
      `${inboxPrefixOf(users.scheduler.user)}.>`,
      `${inboxPrefixOf(users.admin.user)}.>`,
      '_INBOX.>',
    ]);
    // nats-server 2.9 remembers, per connection, the reply subject of every message it
    // delivers to a user with allow_responses, and walks them all on each delivery past
    // 4,096: the generated configuration must not ask for it.
    expect(natsAuthorizationConfig(users)).not.toMatch(/allow_responses/);
  });

  it('permissions are derived from one table: each service publishes only its own events, subscribes only its own subjects', () => {
    const p = natsPermissionsOf('surfaces');
    expect(p.publish.allow).toContain(SUBJECT.decisions.surfaceVote);
    expect(p.publish.allow.filter((s) => s.startsWith('evt.'))).toEqual(['evt.settings.changed']);
    expect(p.subscribe.allow).toContain('svc.surfaces.>');
    expect(p.subscribe.allow).not.toContain('svc.decisions.>');
    expect(natsPermissionsOf('gateway').publish.deny).toContain(SUBJECT.decisions.surfaceVote);
    expect(natsPermissionsOf('decisions').publish.allow).toContain('evt.decision.>');
    expect(natsPermissionsOf('notifier').publish.allow).not.toContain(SUBJECT.access.llmSettings);
  });

  describe("JetStream administration is the provisioning step's: no service's credentials can do it", () => {
    /** Rejected by nats-server for want of permission to publish to `subject` (the API call's subject). */
    const denied = async (attempt: Promise<unknown>, subject: string) => {
      const err = (await attempt.then(
        () => undefined,
        (e: unknown) => e,
      )) as (Error & { cause?: Error }) | undefined;
      expect(`${err?.message} ${err?.cause?.message ?? ''}`).toContain(`Permissions Violation for Publish to "${subject}"`);
    };
    const js = '$JS.API';
    /** A durable of another service than `name`: the one it would re-filter to read every event. */
    const othersDurable = (name: ServiceName) => Object.keys(DURABLE_SUBJECT).find((d) => !d.startsWith(`${name}-`))!;

    it.each([...SERVICE_NAMES])(
      "with %s's credentials: no stream update, delete or purge; no consumer made, re-filtered or deleted; the bucket neither emptied nor deleted",
      async (name) => {
        const bus = await as(name);
        const jsm = await bus.jsm();
        const admin = await as('admin');
        const before = await (await admin.jsm()).streams.info(STREAM_EVENTS);
        const other = othersDurable(name);

        // The EVENTS stream (and DEADLETTER): dropping unconsumed events.
        await denied(jsm.streams.update(STREAM_EVENTS, { max_msgs: 1 }), `${js}.STREAM.UPDATE.${STREAM_EVENTS}`);
        await denied(jsm.streams.delete(STREAM_EVENTS), `${js}.STREAM.DELETE.${STREAM_EVENTS}`);
        await denied(jsm.streams.purge(STREAM_EVENTS), `${js}.STREAM.PURGE.${STREAM_EVENTS}`);
        await denied(jsm.streams.deleteMessage(STREAM_EVENTS, 1), `${js}.STREAM.MSG.DELETE.${STREAM_EVENTS}`);
        await denied(jsm.streams.delete(STREAM_DEADLETTER), `${js}.STREAM.DELETE.${STREAM_DEADLETTER}`);
        await denied(jsm.streams.add({ name: 'SHADOW', subjects: ['shadow.>'] }), `${js}.STREAM.CREATE.SHADOW`);
        // Another service's durable re-filtered to every event (what the client sends for a
        // create or an update on nats-server 2.9, and the older durable form), a new durable
        // or an ephemeral consumer over every event, and its own durable re-filtered too.
        await denied(
          jsm.consumers.add(STREAM_EVENTS, { durable_name: other, filter_subject: 'evt.>', ack_policy: AckPolicy.Explicit }),
          `${js}.CONSUMER.CREATE.${STREAM_EVENTS}.${other}.evt.>`,
        );
        await denied(
          bus.nc.request(
            `${js}.CONSUMER.DURABLE.CREATE.${STREAM_EVENTS}.${other}`,
            JSON.stringify({ stream_name: STREAM_EVENTS, config: { durable_name: other, filter_subject: 'evt.>', ack_policy: 'explicit' } }),
            { timeout: 2000 },
          ),
          `${js}.CONSUMER.DURABLE.CREATE.${STREAM_EVENTS}.${other}`,
        );
        await denied(
          jsm.consumers.add(STREAM_EVENTS, { durable_name: `${name}-everything`, filter_subject: 'evt.>', ack_policy: AckPolicy.Explicit }),
          `${js}.CONSUMER.CREATE.${STREAM_EVENTS}.${name}-everything.evt.>`,
        );
        await denied(
          bus.nc.request(
            `${js}.CONSUMER.CREATE.${STREAM_EVENTS}`,
            JSON.stringify({
              stream_name: STREAM_EVENTS,
              config: { filter_subject: 'evt.>', ack_policy: 'none', deliver_subject: `${inboxPrefixOf(users[name].user)}.x` },
            }),
            { timeout: 2000 },
          ),
          `${js}.CONSUMER.CREATE.${STREAM_EVENTS}`,
        );
        for (const own of durablesOf(name)) {
          await denied(
            bus.nc.request(
              `${js}.CONSUMER.CREATE.${STREAM_EVENTS}.${own}.evt.>`,
              JSON.stringify({ stream_name: STREAM_EVENTS, config: { durable_name: own, filter_subject: 'evt.>', ack_policy: 'explicit' } }),
              { timeout: 2000 },
            ),
            `${js}.CONSUMER.CREATE.${STREAM_EVENTS}.${own}.evt.>`,
          );
        }
        // Another service's durable: neither deleted nor pulled from; its own not deleted either.
        await denied(jsm.consumers.delete(STREAM_EVENTS, other), `${js}.CONSUMER.DELETE.${STREAM_EVENTS}.${other}`);
        for (const own of durablesOf(name)) await denied(jsm.consumers.delete(STREAM_EVENTS, own), `${js}.CONSUMER.DELETE.${STREAM_EVENTS}.${own}`);
        await denied(
          bus.nc.request(`${js}.CONSUMER.MSG.NEXT.${STREAM_EVENTS}.${other}`, JSON.stringify({ batch: 1, expires: 1_000_000_000 }), { timeout: 2000 }),
          `${js}.CONSUMER.MSG.NEXT.${STREAM_EVENTS}.${other}`,
        );
        // The large-body bucket: neither emptied, changed nor deleted (its objects are another matter, below).
        await denied(jsm.streams.purge(LARGE_BUCKET_STREAM), `${js}.STREAM.PURGE.${LARGE_BUCKET_STREAM}`);
        await denied(jsm.streams.delete(LARGE_BUCKET_STREAM), `${js}.STREAM.DELETE.${LARGE_BUCKET_STREAM}`);
        await denied(jsm.streams.update(LARGE_BUCKET_STREAM, { max_age: 1_000_000_000 }), `${js}.STREAM.UPDATE.${LARGE_BUCKET_STREAM}`);
        await denied((await new Objm(bus.js).open('bus-large')).destroy(), `${js}.STREAM.DELETE.${LARGE_BUCKET_STREAM}`);
        // Reading an object is a consumer of that object's chunks alone: one over the whole
        // bucket (every body in transit) is refused, by permission or by the server, which
        // holds the create to the filter its subject names.
        const inbox = `${inboxPrefixOf(users[name].user)}.objects`;
        await denied(
          bus.nc.request(
            `${js}.CONSUMER.CREATE.${LARGE_BUCKET_STREAM}`,
            JSON.stringify({ stream_name: LARGE_BUCKET_STREAM, config: { deliver_subject: inbox, ack_policy: 'none' } }),
            { timeout: 2000 },
          ),
          `${js}.CONSUMER.CREATE.${LARGE_BUCKET_STREAM}`,
        );
        const whole = await bus.nc.request(
          `${js}.CONSUMER.CREATE.${LARGE_BUCKET_STREAM}.all_1.$O.bus-large.C.x`,
          JSON.stringify({
            stream_name: LARGE_BUCKET_STREAM,
            config: { name: 'all_1', filter_subject: '$O.bus-large.>', deliver_subject: inbox, ack_policy: 'none' },
          }),
          { timeout: 2000 },
        );
        expect(whole.json<{ error?: { err_code: number } }>().error?.err_code).toBe(10131); // "did not match filtered subject from create subject"

        // Nothing changed: the stream as it was, every durable on its own subject, the bucket there.
        const ajsm = await admin.jsm();
        const after = await ajsm.streams.info(STREAM_EVENTS);
        expect(after.config).toEqual(before.config);
        expect(after.state.messages).toBeGreaterThanOrEqual(before.state.messages);
        for (const [durable, subject] of Object.entries(DURABLE_SUBJECT))
          expect((await ajsm.consumers.info(STREAM_EVENTS, durable)).config.filter_subject).toBe(subject);
        await expect(ajsm.consumers.info(STREAM_EVENTS, `${name}-everything`)).rejects.toThrow(/consumer not found/);
        await expect(ajsm.streams.info(LARGE_BUCKET_STREAM)).resolves.toBeDefined();
      },
    );

    it("a service's normal work still goes: it publishes its events through JetStream, pulls and acks its own durable, and carries large bodies both ways", async () => {
      // The decisions service publishes what the scheduler's durable takes (acknowledged by the stream).
      const decisions = await as('decisions');
      const event: EventEnvelope = { id: newId('event'), type: EVENT.decisionTimers, org: 'org_perm', occurredAt: new Date().toISOString(), data: {} };
      const ack = await decisions.js.publish(EVENT.decisionTimers, encodeJson(event), { msgID: event.id });
      expect(ack.stream).toBe(STREAM_EVENTS);
      // Not another service's subjects.
      await denied(decisions.js.publish(EVENT.timerExpireDue, encodeJson(event)), EVENT.timerExpireDue);
      // The scheduler (not running here) reads its durable's state, pulls the event and acks it.
      const scheduler = await as('scheduler');
      const consumer = await scheduler.js.consumers.get(STREAM_EVENTS, DURABLE.schedulerDecisionTimers);
      const m = await consumer.next({ expires: 5000 });
      expect(m?.json<EventEnvelope>().id).toBe(event.id);
      expect(await m!.ackAck()).toBe(true);
      expect((await consumer.info()).num_ack_pending).toBe(0);
      // Bodies over max_payload both ways under the services' own users: the gateway's request
      // to the decisions service, and the answer, go through the bucket; each is dropped once read.
      const gateway = await as('gateway');
      const message = 'y'.repeat(1_300_000);
      const echoed = await gateway.call(EchoEndpoints.decisions, { message }, { timeoutMs: 20_000 });
      expect(echoed.message).toBe(message);
      const os = await new Objm((await as('admin')).js).open('bus-large');
      const left = (await os.list()).filter((o) => !o.deleted).map((o) => o.name);
      expect(left).toEqual([]);
    });

    it('the generated configuration denies JetStream administration to every service, whatever else it grants', () => {
      const conf = natsAuthorizationConfig(users);
      for (const name of SERVICE_NAMES) {
        const p = natsPermissionsOf(name, users);
        expect(p.publish.deny).toEqual(expect.arrayContaining([...JETSTREAM_ADMIN_SUBJECTS]));
        for (const grant of p.publish.allow)
          expect(JETSTREAM_ADMIN_SUBJECTS.filter((d) => subjectsOverlap(d, grant) && grant.startsWith('$JS.API'))).toEqual([]);
      }
      expect(conf).toContain('"$JS.API.STREAM.PURGE.>"');
    });
  });
});
