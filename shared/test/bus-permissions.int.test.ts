import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ApproversEndpoints, Bus, DecisionsEndpoints, SUBJECT, callersOf, createLogger, inboxPrefixOf, natsAuthorizationConfig, natsPermissionsOf, subjectsOverlap } from '@approvals/shared';
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
    const bus = await Bus.connect({ url: stack.nats.serviceUrl, name: `as-${name}`, log, auth: { user: users[name].user, pass: users[name].password }, requestTimeoutMs: 2000 });
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

  it("a service answers only those who may ask it: it cannot publish into the inbox of a service that never calls it", async () => {
    // The scheduler calls nothing: no service's inbox is the scheduler's to write to, but
    // the gateway's (its health check pings every service).
    const scheduler = await as('scheduler');
    await expect(scheduler.nc.request(`${inboxPrefixOf(users.decisions.user)}.forged`, '{}', { timeout: 2000 })).rejects.toThrow(/[Pp]ermission/);
    // The notifier calls the policies service but is never called by it: the policies' inbox is not its to write to.
    const notifier = await as('notifier');
    await expect(notifier.nc.request(`${inboxPrefixOf(users.policies.user)}.forged`, '{}', { timeout: 2000 })).rejects.toThrow(/[Pp]ermission/);
  });

  it("every service answers the operators' tools: the admin with its own inbox prefix, and a plain client's default inbox", async () => {
    const admin = await Bus.connect({ url: stack.nats.serviceUrl, name: 'as-admin', log, auth: { user: users.admin.user, pass: users.admin.password }, requestTimeoutMs: 2000 });
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
    expect(natsPermissionsOf('scheduler', users).publish.allow.filter((s) => s.includes('INBOX'))).toEqual([`${inboxPrefixOf(users.gateway.user)}.>`, `${inboxPrefixOf(users.scheduler.user)}.>`, `${inboxPrefixOf(users.admin.user)}.>`, '_INBOX.>']);
    // nats-server 2.9 remembers, per connection, the reply subject of every message it
    // delivers to a user with allow_responses, and walks them all on each delivery past
    // 4,096: the generated configuration must not ask for it.
    expect(natsAuthorizationConfig(users)).not.toMatch(/allow_responses/);
  });

  it('permissions are derived from one table: each service publishes only its own events, subscribes only its own subjects', () => {
    const p = natsPermissionsOf('surfaces');
    expect(p.publish.allow).toContain(SUBJECT.decisions.surfaceVote);
    expect(p.publish.allow.some((s) => s.startsWith('evt.'))).toBe(false);
    expect(p.subscribe.allow).toContain('svc.surfaces.>');
    expect(p.subscribe.allow).not.toContain('svc.decisions.>');
    expect(natsPermissionsOf('gateway').publish.deny).toContain(SUBJECT.decisions.surfaceVote);
    expect(natsPermissionsOf('decisions').publish.allow).toContain('evt.decision.>');
    expect(natsPermissionsOf('notifier').publish.allow).not.toContain(SUBJECT.access.llmSettings);
  });
});
