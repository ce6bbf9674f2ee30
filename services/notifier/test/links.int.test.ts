import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Bus, SUBJECT, createLogger, decodeJson, encodeJson, type MintLinksRequest } from '@approvals/shared';
import { startTestNats, type TestNats } from '@approvals/shared/testing';
import type { Subscription } from '@nats-io/nats-core';
import { createLinkMinter } from '../src/usecases/links';

const log = createLogger('links-test', 'silent');

/**
 * The notifier's link minter over real NATS, against a stand-in for surfaces' endpoint:
 * what it asks, and how it shares out the answers.
 */
describe("a decision's links asked together", () => {
  let nats: TestNats;
  let notifier: Bus;
  let surfaces: Bus;
  let sub: Subscription | undefined;
  const asked: MintLinksRequest[] = [];

  beforeAll(async () => {
    nats = await startTestNats();
    notifier = await Bus.connect({ url: nats.url, name: 'links-notifier', log });
    surfaces = await Bus.connect({ url: nats.url, name: 'links-surfaces', log });
  });

  afterAll(async () => {
    sub?.unsubscribe();
    await notifier?.close();
    await surfaces?.close();
    await nats?.stop();
  });

  /** Answers mint_links as a surfaces replica would: `byApprover` only if `knowsMore`. */
  const serve = async (knowsMore: boolean) => {
    sub?.unsubscribe();
    asked.length = 0;
    const linksOf = (email: string) => ({ approve: `https://x/approve/${email}`, reject: `https://x/reject/${email}` });
    sub = surfaces.nc.subscribe(SUBJECT.surfaces.mintLinks, {
      callback: (_err, m) => {
        const req = decodeJson(m.data) as MintLinksRequest;
        asked.push(req);
        const data =
          knowsMore && req.moreApprovers
            ? { links: linksOf(req.approverEmail), byApprover: Object.fromEntries(req.moreApprovers.map((e) => [e, linksOf(e)])) }
            : { links: linksOf(req.approverEmail) };
        m.respond(encodeJson({ ok: true, data }));
      },
    });
    await surfaces.nc.flush();
  };

  it('asks once for the approvers of one decision asked in the same turn, once per decision, and gives each their own links', async () => {
    await serve(true);
    const mint = createLinkMinter(notifier);
    const of = (decisionId: string, approverEmail: string) => mint({ org: 'org_1', decisionId, approverEmail, expiresAt: null });
    const [a, b, c, other] = await Promise.all([of('dec_1', 'a@x.com'), of('dec_1', 'b@x.com'), of('dec_1', 'c@x.com'), of('dec_2', 'a@x.com')]);
    expect(a.approve).toBe('https://x/approve/a@x.com');
    expect(b.reject).toBe('https://x/reject/b@x.com');
    expect(c.approve).toBe('https://x/approve/c@x.com');
    expect(other.approve).toBe('https://x/approve/a@x.com');
    expect(asked.map((r) => [r.decisionId, r.approverEmail, r.moreApprovers ?? []]).sort()).toEqual([
      ['dec_1', 'a@x.com', ['b@x.com', 'c@x.com']],
      ['dec_2', 'a@x.com', []],
    ]);
    // Nothing is kept: the next turn asks again.
    await of('dec_1', 'a@x.com');
    expect(asked).toHaveLength(3);
  });

  it('a surfaces replica that predates moreApprovers: the others are asked one by one', async () => {
    await serve(false);
    const mint = createLinkMinter(notifier);
    const of = (approverEmail: string) => mint({ org: 'org_1', decisionId: 'dec_3', approverEmail, expiresAt: null });
    const [a, b] = await Promise.all([of('a@x.com'), of('b@x.com')]);
    expect(a.approve).toBe('https://x/approve/a@x.com');
    expect(b.approve).toBe('https://x/approve/b@x.com');
    expect(asked.map((r) => [r.approverEmail, r.moreApprovers ?? []])).toEqual([
      ['a@x.com', ['b@x.com']],
      ['b@x.com', []],
    ]);
  });

  it('a failed call fails every mail that waited on it (each is retried as its delivery)', async () => {
    sub?.unsubscribe();
    sub = surfaces.nc.subscribe(SUBJECT.surfaces.mintLinks, {
      callback: (_err, m) => void m.respond(encodeJson({ ok: false, error: { code: 'unavailable', message: 'down', details: {} } })),
    });
    await surfaces.nc.flush();
    const mint = createLinkMinter(notifier);
    const of = (approverEmail: string) => mint({ org: 'org_1', decisionId: 'dec_4', approverEmail, expiresAt: null }).catch((e: unknown) => e);
    const [a, b] = await Promise.all([of('a@x.com'), of('b@x.com')]);
    expect(a).toMatchObject({ code: 'unavailable' });
    expect(b).toMatchObject({ code: 'unavailable' });
  });
});
