import { describe, expect, it } from '@jest/globals';
import { EVENT, type DomainEvent } from '@approvals/shared';
import { safeNext } from '../src/auth/email-link';
import { reachOf, reachOfAll } from '../src/consumers/audit.consumer';

describe('email-link sign-in: pure rules', () => {
  it('keeps only return paths inside the app (never another origin)', () => {
    expect(safeNext('/app/decisions/dec_1')).toBe('/app/decisions/dec_1');
    expect(safeNext('/app/?status=PENDING')).toBe('/app/?status=PENDING');
    for (const bad of [
      '//evil.example/app/',
      'https://evil.example/app/',
      '/\\evil.example',
      '/app/\\x',
      '/docs',
      'javascript:alert(1)',
      '/app/ x',
      '',
      null,
      undefined,
    ]) {
      expect(safeNext(bad)).toBeNull();
    }
    expect(safeNext(`/app/${'x'.repeat(600)}`)).toBeNull();
  });

  it('learns who is an approver of an org from the events', () => {
    const event = (type: string, data: Record<string, unknown>) =>
      ({ id: 'evt_1', type, org: 'org_a', occurredAt: new Date().toISOString(), data }) as unknown as DomainEvent;
    expect(reachOf(event(EVENT.decisionCreated, { approvers: ['a@example.com', 'b@example.com'] })).add).toEqual([
      { org: 'org_a', email: 'a@example.com' },
      { org: 'org_a', email: 'b@example.com' },
    ]);
    expect(reachOf(event(EVENT.approverChanged, { change: 'registered', email: 'c@example.com' })).add).toEqual([{ org: 'org_a', email: 'c@example.com' }]);
    expect(reachOf(event(EVENT.approverChanged, { change: 'endpoint_set', email: 'c@example.com' }))).toEqual({ add: [], remove: [] });
    expect(reachOf(event(EVENT.approverDisabled, { email: 'c@example.com' })).remove).toEqual([{ org: 'org_a', email: 'c@example.com' }]);
    expect(reachOf(event(EVENT.approverEnabled, { email: 'c@example.com' })).add).toEqual([{ org: 'org_a', email: 'c@example.com' }]);
    expect(reachOf(event(EVENT.decisionResolved, { decisionId: 'dec_1' }))).toEqual({ add: [], remove: [] });
  });

  it('folds a batch of events into one change: each person keeps their last word, in event order', () => {
    const event = (type: string, data: Record<string, unknown>, org = 'org_a') =>
      ({ id: 'evt_1', type, org, occurredAt: new Date().toISOString(), data }) as unknown as DomainEvent;
    const change = reachOfAll([
      event(EVENT.decisionCreated, { approvers: ['a@example.com', 'b@example.com'] }),
      event(EVENT.approverDisabled, { email: 'a@example.com' }),
      event(EVENT.approverDisabled, { email: 'c@example.com' }),
      event(EVENT.approverEnabled, { email: 'C@example.com' }),
      event(EVENT.decisionCreated, { approvers: ['b@example.com'] }),
      event(EVENT.approverDisabled, { email: 'b@example.com' }, 'org_b'),
    ]);
    expect(change).toEqual({
      add: [
        { org: 'org_a', email: 'b@example.com' },
        { org: 'org_a', email: 'C@example.com' },
      ],
      remove: [
        { org: 'org_a', email: 'a@example.com' },
        { org: 'org_b', email: 'b@example.com' },
      ],
    });
    expect(reachOfAll([event(EVENT.decisionResolved, { decisionId: 'dec_1' })])).toEqual({ add: [], remove: [] });
  });
});
