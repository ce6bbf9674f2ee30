import { describe, expect, it } from '@jest/globals';
import { notifierConfigFromEnv } from '../src/config';
import { DeliveryError } from '../src/providers/provider';
import { assertPublicTarget, isPrivateAddress } from '../src/providers/targets';

describe('webhook targets: never this host or a private network unless allowed', () => {
  it.each([
    ['127.0.0.1', true],
    ['10.1.2.3', true],
    ['172.16.0.9', true],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['::1', true],
    ['fd00::1', true],
    ['fe80::1', true],
    ['::ffff:127.0.0.1', true],
    ['93.184.216.34', false],
    ['2606:4700:4700::1111', false],
  ])('isPrivateAddress(%s) is %s', (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });

  it('refuses private targets permanently (no retries), by literal or by name, unless the deployment allows them', async () => {
    for (const url of ['http://127.0.0.1:9393/hook', 'http://[::1]/hook', 'http://169.254.169.254/latest/meta-data', 'http://localhost:8080/x']) {
      const err = await assertPublicTarget(url, false).then(() => null, (e: unknown) => e);
      expect({ url, err }).toEqual({ url, err: expect.any(DeliveryError) });
      expect((err as DeliveryError).permanent).toBe(true);
      expect((err as Error).message).toMatch(/WEBHOOK_ALLOW_PRIVATE_TARGETS/);
      await expect(assertPublicTarget(url, true)).resolves.toBeUndefined();
    }
    await expect(assertPublicTarget('https://93.184.216.34/hook', false)).resolves.toBeUndefined();
  });

  it('is off by default', () => {
    const base = { DATABASE_URL: 'postgres://x@127.0.0.1/x', NATS_URL: 'nats://127.0.0.1:4222', AUTH_JWT_SECRET: 'x'.repeat(32) };
    expect(notifierConfigFromEnv(base).WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(false);
    expect(notifierConfigFromEnv({ ...base, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }).WEBHOOK_ALLOW_PRIVATE_TARGETS).toBe(true);
    expect(() => notifierConfigFromEnv({ ...base, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'yes' })).toThrow(/WEBHOOK_ALLOW_PRIVATE_TARGETS/);
  });
});
