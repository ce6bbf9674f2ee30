import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Bus, ChatEndpoints, EVENT, ServiceHost, announceChange, createLogger, followChanges, type EventEnvelope } from '@approvals/shared';
import { startTestNats, waitFor, type TestNats } from '@approvals/shared/testing';
import { ChatFollowers } from '../src/usecases/chat-followers';

/**
 * Which orgs' decision events get an `evt.decision.chat` companion, on a real nats-server.
 * The surfaces service's side of `svc.surfaces.chat_follows` is played by a responder that
 * answers from a set of installed orgs and announces its changes as the service does.
 */
describe('chat followers (the decisions service)', () => {
  let nats: TestNats;
  let decisions: Bus;
  let surfaces: Bus;
  let host: ServiceHost | undefined;
  const log = createLogger('chat-followers-test', 'silent');
  const installed = new Set<string>();
  const asked: string[] = [];
  let stopFollowing: () => void;
  let followers: ChatFollowers;

  const serveSurfaces = async () => {
    host = await ServiceHost.create({ bus: surfaces, name: 'surfaces', version: '0.0.1', log });
    host.handle(ChatEndpoints.follows, async (r) => {
      asked.push(r.org);
      return { follows: installed.has(r.org) };
    });
    await surfaces.nc.flush();
  };
  const event = (type: string, org: string, n = 1): EventEnvelope => ({
    id: `evt_${org}_${type}_${n}`,
    type,
    org,
    occurredAt: '2026-11-26T10:00:00.000Z',
    data: { decisionId: `dec_${n}` },
  });
  const askedAbout = (org: string) => asked.filter((o) => o === org).length;

  beforeAll(async () => {
    nats = await startTestNats();
    decisions = await Bus.connect({ url: nats.url, name: 'decisions', log });
    surfaces = await Bus.connect({ url: nats.url, name: 'surfaces', log });
    await serveSurfaces();
    followers = new ChatFollowers({ bus: decisions, log });
    stopFollowing = followChanges(decisions, log, 'surfaces', [followers]);
    await decisions.nc.flush();
  });
  afterAll(async () => {
    stopFollowing?.();
    await host?.stop().catch(() => undefined);
    await decisions?.close();
    await surfaces?.close();
    await nats?.stop();
  });

  it('an org not known yet follows (nothing waits), and is asked once in the background; once known to have no installation, its events get no companion', async () => {
    expect(followers.companions([event(EVENT.decisionCreated, 'org_plain')])).toHaveLength(1);
    expect(followers.follows('org_plain')).toBe(true);
    await waitFor(() => followers.follows('org_plain') === false, { what: 'the answer kept' });
    expect(askedAbout('org_plain')).toBe(1);
    expect(
      followers.companions([
        event(EVENT.decisionCreated, 'org_plain', 2),
        event(EVENT.decisionVoteRecorded, 'org_plain', 2),
        event(EVENT.decisionResolved, 'org_plain', 2),
      ]),
    ).toEqual([]);
    expect(askedAbout('org_plain')).toBe(1);
  });

  it('an org with an installation: its created, vote, resolved and cancelled events get a companion carrying them whole; other events none', async () => {
    installed.add('org_chat');
    followers.follows('org_chat');
    await waitFor(() => askedAbout('org_chat') === 1 && followers.size >= 2, { what: 'org_chat known' });
    const envs = [
      EVENT.decisionCreated,
      EVENT.decisionVoteRecorded,
      EVENT.decisionConsumed,
      EVENT.decisionResolved,
      EVENT.decisionCancelled,
      EVENT.decisionEvidenceAdded,
    ].map((t) => event(t, 'org_chat', 7));
    envs[0]!.traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const out = followers.companions(envs);
    expect(out.map((e) => e.data.event)).toEqual([EVENT.decisionCreated, EVENT.decisionVoteRecorded, EVENT.decisionResolved, EVENT.decisionCancelled]);
    expect(out[0]).toEqual({
      id: `${envs[0]!.id}:chat`,
      type: EVENT.decisionChat,
      org: 'org_chat',
      occurredAt: envs[0]!.occurredAt,
      data: { event: EVENT.decisionCreated, of: envs[0]!.id, data: envs[0]!.data },
      traceparent: envs[0]!.traceparent,
    });
    // The same events give the same companions (a republished batch is dropped by the stream).
    expect(followers.companions(envs)).toEqual(out);
  });

  it('an install or an uninstall, once announced, holds for the next event: the org is asked again', async () => {
    expect(followers.follows('org_plain')).toBe(false);
    installed.add('org_plain');
    await announceChange(surfaces, 'surfaces', 'org_plain');
    // Dropped before the announcement returned: the next event has its companion.
    expect(followers.companions([event(EVENT.decisionCreated, 'org_plain', 3)])).toHaveLength(1);
    await waitFor(() => askedAbout('org_plain') === 2, { what: 'asked again' });
    await waitFor(() => followers.size >= 2, { what: 'the answer kept' });
    expect(followers.follows('org_plain')).toBe(true);

    installed.delete('org_chat');
    await announceChange(surfaces, 'surfaces', null);
    expect(followers.size).toBe(0);
    followers.follows('org_chat');
    await waitFor(() => askedAbout('org_chat') === 2 && followers.size >= 1, { what: 'org_chat asked again' });
    expect(followers.companions([event(EVENT.decisionResolved, 'org_chat', 4)])).toEqual([]);
  });

  it('an answer that began before a change is not kept', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await host!.stop();
    host = await ServiceHost.create({ bus: surfaces, name: 'surfaces', version: '0.0.1', log });
    host.handle(ChatEndpoints.follows, async (r) => {
      asked.push(r.org);
      const answer = installed.has(r.org);
      await gate;
      return { follows: answer };
    });
    await surfaces.nc.flush();
    expect(followers.follows('org_slow')).toBe(true);
    await waitFor(() => askedAbout('org_slow') === 1, { what: 'asked' });
    // The org installs while the answer ("no") is on its way.
    installed.add('org_slow');
    await announceChange(surfaces, 'surfaces', 'org_slow');
    release();
    await new Promise((r) => setTimeout(r, 200));
    expect(followers.follows('org_slow')).toBe(true);
    await host.stop();
    await serveSurfaces();
  });

  it('without the surfaces service every org follows: events keep their companions, and nothing waits', async () => {
    await host!.stop();
    host = undefined;
    await surfaces.nc.flush();
    await announceChange(surfaces, 'surfaces', null);
    // Answered synchronously (an array, not a promise): nothing can wait on the absent service.
    expect(followers.companions([event(EVENT.decisionCreated, 'org_gone', 5)])).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(followers.follows('org_gone')).toBe(true);
    expect(followers.companions([event(EVENT.decisionVoteRecorded, 'org_gone', 5)])).toHaveLength(1);
    await serveSurfaces();
  });

  it('remembers a bounded number of orgs, the longest unasked first out', async () => {
    const small = new ChatFollowers({ bus: decisions, log, maxOrgs: 2 });
    for (const org of ['o1', 'o2', 'o3']) {
      small.follows(org);
      await waitFor(() => askedAbout(org) >= 1 && small.size >= Math.min(2, Number(org.slice(1))), { what: `${org} known` });
    }
    expect(small.size).toBe(2);
  });
});
