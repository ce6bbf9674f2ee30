import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Bus, RETIRED_DURABLES, STREAM_EVENTS, createLogger } from '@approvals/shared';
import { AckPolicy } from '@nats-io/jetstream';
import { startStack, type Stack } from '../../../test/helpers/stack';

/**
 * Durables that took a wildcard (and so received every event they ignored) are replaced
 * by one durable per subject; the policies service's decision durables are gone (the
 * decisions service answers policy usage); the surfaces service's four decision durables
 * are one, on `evt.decision.chat`. The service deletes its retired ones at start.
 */
describe('retired durables', () => {
  let stack: Stack;
  let bus: Bus;

  beforeAll(async () => {
    stack = await startStack({ label: 'retired', services: ['decisions'] });
    bus = await Bus.connect({ url: stack.nats.url, name: 'retired-test', log: createLogger('t', 'silent') });
  });
  afterAll(async () => {
    await bus?.close();
    await stack?.stop();
  });

  it('the gateway, policies and surfaces delete their retired durables at start; the gateway runs one durable per subject, policies none, surfaces one for chat', async () => {
    const jsm = await bus.jsm();
    const retired = [...RETIRED_DURABLES.gateway!, ...RETIRED_DURABLES.policies!, ...RETIRED_DURABLES.surfaces!];
    expect(retired).toEqual([
      'gateway-audit',
      'gateway-audit-force-deleted',
      'policies-decision-usage',
      'policies-decision-created',
      'policies-decision-resolved',
      'policies-decision-cancelled',
      'surfaces-decision-created',
      'surfaces-decision-resolved',
      'surfaces-vote-recorded',
      'surfaces-decision-cancelled',
    ]);
    for (const durable of retired) await jsm.consumers.add(STREAM_EVENTS, { durable_name: durable, ack_policy: AckPolicy.Explicit, filter_subject: 'evt.>' });

    await stack.startService('policies');
    await stack.startService('gateway');
    await stack.startService('surfaces');

    const names: string[] = [];
    for await (const c of jsm.consumers.list(STREAM_EVENTS)) names.push(c.name);
    for (const durable of retired) expect(names).not.toContain(durable);
    expect(names.filter((n) => n.startsWith('gateway-')).sort()).toEqual([
      'gateway-audit-approver',
      'gateway-audit-cancelled',
      'gateway-audit-consumed',
      'gateway-audit-decision-created',
      'gateway-audit-policy',
      'gateway-audit-resolved',
      'gateway-audit-settings',
      'gateway-audit-vote-recorded',
      'gateway-audit-vote-refused',
    ]);
    expect(names.filter((n) => n.startsWith('policies-'))).toEqual([]);
    expect(names.filter((n) => n.startsWith('surfaces-')).sort()).toEqual(['surfaces-decision-chat', 'surfaces-timer-retention']);
  });
});
