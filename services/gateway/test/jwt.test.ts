import { describe, expect, it } from '@jest/globals';
import jwt from 'jsonwebtoken';
import { CLOCK_SKEW_SEC, VERIFIED_FOR_MS, createJwtVerifier } from '../src/auth/jwt';

/**
 * A session's token is verified once and its verdict reused for its next requests, never
 * past the token's expiry (with the skew allowed) nor for longer than VERIFIED_FOR_MS.
 */
describe('session tokens: a verdict reused, never past expiry', () => {
  const secret = 'test-secret-for-jwt-cache-0123456789';
  const t0 = Date.UTC(2026, 10, 26, 12, 0, 0);
  const sign = (claims: Record<string, unknown>, key = secret) =>
    jwt.sign({ sub: 'u1', email: 'A@X.example.com', org: 'org_1', ...claims }, key, { algorithm: 'HS256', noTimestamp: true });

  it('the same token answers the same claims while it is valid, and is refused once expired though it was verified before', async () => {
    let clock = t0;
    const verify = createJwtVerifier({ secret, now: () => clock });
    const token = sign({ exp: t0 / 1000 + 120 });
    const first = await verify(token);
    expect(first).toEqual({ sub: 'u1', email: 'a@x.example.com', org: 'org_1', role: 'member' });
    expect(first).not.toHaveProperty('exp');
    clock = t0 + 30_000;
    expect(await verify(token)).toEqual(first);
    // Past exp, within the skew: still a session.
    clock = t0 + 150_000;
    expect(await verify(token)).toEqual(first);
    // Past exp and the skew: refused, whatever was verified before.
    clock = t0 + (120 + CLOCK_SKEW_SEC) * 1000 + 1000;
    await expect(verify(token)).rejects.toMatchObject({ code: 'unauthorized', message: 'token expired' });
  });

  it('a verdict is for that exact token: another signature or another key is verified, and refused', async () => {
    let clock = t0;
    const verify = createJwtVerifier({ secret, now: () => clock });
    const token = sign({ exp: t0 / 1000 + 3600 });
    await verify(token);
    clock = t0 + VERIFIED_FOR_MS + 1;
    await expect(verify(token)).resolves.toMatchObject({ sub: 'u1' });
    const [h, p] = token.split('.');
    await expect(verify(`${h}.${p}.${'A'.repeat(43)}`)).rejects.toMatchObject({ code: 'unauthorized' });
    await expect(verify(sign({ exp: t0 / 1000 + 3600 }, 'another-secret-0123456789abcdef'))).rejects.toMatchObject({ code: 'unauthorized' });
  });

  it('a refused token stays refused (refusals are not kept as verdicts)', async () => {
    let clock = t0;
    const verify = createJwtVerifier({ secret, now: () => clock });
    const early = sign({ exp: t0 / 1000 + 600, nbf: t0 / 1000 + 300 });
    await expect(verify(early)).rejects.toMatchObject({ code: 'unauthorized' });
    clock = t0 + 300_000;
    await expect(verify(early)).resolves.toMatchObject({ sub: 'u1' });
  });
});
