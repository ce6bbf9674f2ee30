import { describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { DecisionsEnv } from '../src/config';
import { createReceiptSigner } from '../src/receipts/receipt-signer';

const ed25519 = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const BASE = { DATABASE_URL: 'postgres://localhost/x', SECRETS_KEY: Buffer.alloc(32, 1).toString('base64') };
const configIssues = (env: Record<string, string>) => {
  const r = DecisionsEnv.safeParse({ ...BASE, ...env });
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('receipt keys', () => {
  it('a PKCS#8 Ed25519 PEM is accepted, also with \\n escaped (an env file); anything else is refused at start with a reason', () => {
    const pem = ed25519();
    expect(configIssues({ RECEIPT_SIGNING_KEY: pem })).toEqual([]);
    expect(configIssues({ RECEIPT_SIGNING_KEY: pem.replace(/\n/g, '\\n') })).toEqual([]);
    expect(configIssues({ RECEIPT_SIGNING_KEY: 'secret' })[0]).toMatch(/RECEIPT_SIGNING_KEY: .*PKCS#8 PEM/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(configIssues({ RECEIPT_SIGNING_KEY: rsa })[0]).toMatch(/must be an Ed25519 key, not rsa/);
    expect(configIssues({ RECEIPT_RETIRED_KEYS: 'nope' })[0]).toMatch(/RECEIPT_RETIRED_KEYS must be JSON/);
    expect(configIssues({ RECEIPT_RETIRED_KEYS: '[{"kty":"RSA","n":"x","e":"AQAB"}]' })[0]).toMatch(/Ed25519 public JWK/);
    const priv = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
    expect(configIssues({ RECEIPT_RETIRED_KEYS: JSON.stringify([priv]) })[0]).toMatch(/private key material/);
  });

  it('the kid is the key thumbprint: the same on every replica; retired keys follow the current one, listed once', async () => {
    const pem = ed25519();
    const a = await createReceiptSigner({ signingKey: pem });
    const b = await createReceiptSigner({ signingKey: pem });
    expect(a.kid).toBe(b.kid);
    const next = await createReceiptSigner({ signingKey: ed25519(), retiredKeys: JSON.stringify({ keys: [...a.jwks().keys, ...a.jwks().keys] }) });
    expect(next.jwks().keys.map((k) => k.kid)).toEqual([next.kid, a.kid]);
    const jws = await a.sign({
      iss: 'x',
      sub: 'dec_1',
      org: 'o',
      status: 'APPROVED',
      factsHash: null,
      policy: null,
      votes: [],
      requestedBy: null,
      createdAt: 't',
      resolvedAt: 't',
      iat: 1,
    });
    await expect(jwtVerify(jws, createLocalJWKSet(next.jwks()), { algorithms: ['EdDSA'] })).resolves.toMatchObject({ protectedHeader: { kid: a.kid } });
  });

  it('without a key: no kid, an empty JWKS (receipts are refused: receipts_not_configured)', async () => {
    const none = await createReceiptSigner({});
    expect(none.kid).toBeNull();
    expect(none.jwks()).toEqual({ keys: [] });
  });
});
