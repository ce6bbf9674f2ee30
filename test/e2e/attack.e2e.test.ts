import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runAttacks } from '../../deploy/src/attack';
import { startStack, type Stack } from '../helpers/stack';

/**
 * `npm run attack` replays the security reviews' attacks against a running system: here
 * against the whole stack in this process, every service under its own NATS user. Each
 * attack must be refused; what needs a chat provider is not applicable without one.
 */
describe('npm run attack against a running stack', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ label: 'attack' });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('every attack is refused', async () => {
    const findings = await runAttacks({ baseUrl: stack.baseUrl, jwtSecret: stack.secret, nats: { url: stack.nats.serviceUrl, users: stack.nats.users! } });
    expect(findings.length).toBeGreaterThanOrEqual(10);
    expect(findings.filter((f) => f.held === false)).toEqual([]);
    expect(findings.filter((f) => f.held === true).length).toBeGreaterThanOrEqual(9);
  });
});
