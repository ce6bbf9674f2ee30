import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { factsHash } from '@approvals/shared';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { ISO, SERVICES, decide, expectError, openDecision } from './actions.helpers';

const REVIEWER = 'rita@receipts.example.com';
const SECOND = 'sam@receipts.example.com';
const HASH = factsHash({ action: 'refund', amount: 120, to: 'cus_42' });

/** jose's own check, as any third party would run it: EdDSA only, the receipt `typ`. */
const verifyWith = (jws: string, jwks: JSONWebKeySet) => jwtVerify(jws, createLocalJWKSet(jwks), { algorithms: ['EdDSA'], typ: 'approval-receipt+jwt' });

/** The same JWS with one character of its payload changed (decoding to other bytes). */
function oneByteChanged(jws: string): string {
  const [h, p, s] = jws.split('.') as [string, string, string];
  const i = Math.floor(p.length / 2);
  const swapped = p[i] === 'A' ? 'B' : 'A';
  return [h, p.slice(0, i) + swapped + p.slice(i + 1), s].join('.');
}

describe('signed receipts', () => {
  let stack: Stack;
  let org: string;
  let apiKey: string;
  let keyId: string;
  let reviewer: string;

  beforeAll(async () => {
    stack = await startStack({ services: SERVICES, label: 'decreceipts' });
    ({ org, apiKey, keyId } = await stack.newOrg());
    reviewer = stack.session({ org, email: REVIEWER, role: 'reviewer' });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const jwks = async (): Promise<JSONWebKeySet> => {
    const res = await stack.http('GET', '/.well-known/jwks.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/jwk-set\+json/);
    return typeof res.body === 'string' ? JSON.parse(res.body) : res.body;
  };
  const workerReceipt = (id: string, token = apiKey) => stack.http('GET', `/v1/worker/decisions/${id}/receipt`, { token });
  const approved = async (extra: Record<string, unknown> = {}) => {
    const id = await openDecision(stack, apiKey, { approvers: [REVIEWER], factsHash: HASH, ...extra });
    expect((await decide(stack, reviewer, id, { decision: 'approve', note: 'refund is within policy' })).body.status).toBe('APPROVED');
    return id;
  };

  it('the JWKS is public and lists the current Ed25519 key', async () => {
    const set = await jwks();
    expect(set.keys).toHaveLength(1);
    expect(set.keys[0]).toEqual({ kty: 'OKP', crv: 'Ed25519', x: expect.any(String), kid: expect.any(String), alg: 'EdDSA', use: 'sig' });
  });

  it('an approved decision: a JWS that verifies with the JWKS, its payload exactly section 3', async () => {
    const id = await approved();
    await stack.http('POST', `/v1/worker/decisions/${id}/consume`, { token: apiKey, body: { consumer: 'refunds', factsHash: HASH } });
    const res = await workerReceipt(id);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['receipt']);
    const set = await jwks();
    const { payload, protectedHeader } = await verifyWith(res.body.receipt, set);
    expect(protectedHeader).toEqual({ alg: 'EdDSA', kid: set.keys[0]!.kid, typ: 'approval-receipt+jwt' });
    expect(payload).toEqual({
      iss: stack.env.PUBLIC_BASE_URL,
      sub: id,
      org,
      status: 'APPROVED',
      factsHash: HASH,
      policy: null,
      votes: [{ voter: REVIEWER, decision: 'approve', surface: 'inbox', at: expect.stringMatching(ISO), note: 'refund is within policy' }],
      requestedBy: keyId,
      createdAt: expect.stringMatching(ISO),
      resolvedAt: expect.stringMatching(ISO),
      consumedBy: 'refunds',
      iat: expect.any(Number),
    });
    // The session route answers the same statement (signed afresh).
    const session = await stack.http('GET', `/v1/decisions/${id}/receipt`, { token: reviewer });
    expect(session.status).toBe(200);
    const again = await verifyWith(session.body.receipt, set);
    expect({ ...again.payload, iat: 0 }).toEqual({ ...payload, iat: 0 });
  });

  it('a policy decision names the policy version; a vote without a note carries none; not consumed: no consumedBy', async () => {
    const admin = stack.session({ org, email: 'ada@receipts.example.com', role: 'admin' });
    const p = await stack.http('POST', '/v1/policies/', {
      token: admin,
      body: { key: 'refunds-receipt', name: 'Refunds', defaults: { approvers: [REVIEWER, SECOND], approvalsRequired: 1 } },
    });
    expect([200, 201]).toContain(p.status);
    const id = await openDecision(stack, apiKey, { policy: 'refunds-receipt' });
    expect((await decide(stack, stack.session({ org, email: SECOND }), id, { decision: 'reject' })).body.status).toBe('REJECTED');
    const { payload } = await verifyWith((await workerReceipt(id)).body.receipt, await jwks());
    expect(payload).toMatchObject({ status: 'REJECTED', factsHash: null, policy: { key: 'refunds-receipt', version: 1, versionId: expect.any(String) } });
    expect(payload.votes).toEqual([{ voter: SECOND, decision: 'reject', surface: 'inbox', at: expect.stringMatching(ISO) }]);
    expect('consumedBy' in payload).toBe(false);
  });

  it('one changed byte is refused', async () => {
    const id = await approved();
    const { receipt } = (await workerReceipt(id)).body;
    const set = await jwks();
    await expect(verifyWith(receipt, set)).resolves.toBeDefined();
    await expect(verifyWith(oneByteChanged(receipt), set)).rejects.toMatchObject({ code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
    const sig = receipt.split('.')[2]!;
    const i = Math.floor(sig.length / 2);
    const badSig = receipt.slice(0, receipt.length - sig.length) + sig.slice(0, i) + (sig[i] === 'A' ? 'B' : 'A') + sig.slice(i + 1);
    await expect(verifyWith(badSig, set)).rejects.toMatchObject({ code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
  });

  it('a PENDING decision: 409 not_resolved on both routes', async () => {
    const id = await openDecision(stack, apiKey, { approvers: [REVIEWER] });
    expectError(await workerReceipt(id), 409, 'not_resolved', { status: 'PENDING' });
    expectError(await stack.http('GET', `/v1/decisions/${id}/receipt`, { token: reviewer }), 409, 'not_resolved');
  });

  it("another org's decision, an unknown one, or one not naming a reviewer: 404", async () => {
    const id = await approved();
    const other = await stack.newOrg();
    expectError(await workerReceipt(id, other.apiKey), 404, 'not_found');
    expectError(await stack.http('GET', `/v1/decisions/${id}/receipt`, { token: other.admin }), 404, 'not_found');
    expectError(await workerReceipt('dec_nope'), 404, 'not_found');
    const stranger = stack.session({ org, email: 'nobody@receipts.example.com', role: 'reviewer' });
    expectError(await stack.http('GET', `/v1/decisions/${id}/receipt`, { token: stranger }), 404, 'not_found');
    // A session on the worker route, a key on the session route: refused as every such route is.
    expectError(await workerReceipt(id, reviewer), 403, 'forbidden');
    expectError(await stack.http('GET', `/v1/decisions/${id}/receipt`, { token: apiKey }), 403, 'forbidden');
  });

  it('after a key rotation old receipts still verify and new ones carry the new kid', async () => {
    const before = await jwks();
    const oldKid = before.keys[0]!.kid!;
    const oldReceipt = (await workerReceipt(await approved())).body.receipt as string;

    const next = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    await stack.stopService('decisions');
    await stack.startService('decisions', { RECEIPT_SIGNING_KEY: next, RECEIPT_RETIRED_KEYS: JSON.stringify(before) });

    const after = await jwks();
    expect(after.keys.map((k) => k.kid)).toHaveLength(2);
    const newKid = after.keys[0]!.kid!;
    expect(newKid).not.toBe(oldKid);
    expect(after.keys[1]).toEqual(before.keys[0]);
    await expect(verifyWith(oldReceipt, after)).resolves.toMatchObject({ protectedHeader: { kid: oldKid } });

    const fresh = (await workerReceipt(await approved())).body.receipt as string;
    expect(decodeProtectedHeader(fresh).kid).toBe(newKid);
    await expect(verifyWith(fresh, after)).resolves.toBeDefined();
    // The old JWKS alone cannot vouch for a receipt of the new key.
    await expect(verifyWith(fresh, before)).rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' });
  });

  it('without a signing key: 409 receipts_not_configured, and the JWKS keeps the retired keys', async () => {
    const listed = await jwks();
    await stack.stopService('decisions');
    await stack.startService('decisions', { RECEIPT_SIGNING_KEY: '', RECEIPT_RETIRED_KEYS: JSON.stringify(listed) });
    expectError(await workerReceipt(await approved()), 409, 'receipts_not_configured');
    expect((await jwks()).keys).toEqual(listed.keys);
  });
});
