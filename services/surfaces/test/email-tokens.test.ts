import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '@approvals/shared';
import { SurfacesEnv, deriveLinkSecret, surfacesConfigFromEnv } from '../src/config';
import { newTokenId, signToken, tokenState, verifyToken, STALE_CLAIM_MS } from '../src/domain/link-tokens';
import type { ActionTokenRow } from '../src/store/action-tokens.store';
import { esc } from '../src/templates/pages';

const BASE = { DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db', SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') };
const SECRET = 'a-link-secret-of-some-length';

describe('surfaces config: SURFACES_LINK_SECRET', () => {
  it('uses SURFACES_LINK_SECRET when set', () => {
    expect(surfacesConfigFromEnv({ ...BASE, SURFACES_LINK_SECRET: SECRET, AUTH_JWT_SECRET: 'x'.repeat(32) }).SURFACES_LINK_SECRET).toBe(SECRET);
  });

  it('derives it from AUTH_JWT_SECRET when unset (or empty), never equal to the session secret', () => {
    const jwt = 'j'.repeat(40);
    const a = surfacesConfigFromEnv({ ...BASE, AUTH_JWT_SECRET: jwt });
    const b = SurfacesEnv.parse({ ...BASE, AUTH_JWT_SECRET: jwt, SURFACES_LINK_SECRET: '' });
    expect(a.SURFACES_LINK_SECRET).toBe(deriveLinkSecret(jwt));
    expect(b.SURFACES_LINK_SECRET).toBe(a.SURFACES_LINK_SECRET);
    expect(a.SURFACES_LINK_SECRET).not.toBe(jwt);
    expect(a.SURFACES_LINK_SECRET).toMatch(/^[0-9a-f]{64}$/);
    expect(deriveLinkSecret('k'.repeat(40))).not.toBe(a.SURFACES_LINK_SECRET);
  });

  it('refuses to start naming SURFACES_LINK_SECRET when neither is set', () => {
    expect(() => surfacesConfigFromEnv({ ...BASE })).toThrow(ConfigError);
    expect(() => surfacesConfigFromEnv({ ...BASE })).toThrow(/SURFACES_LINK_SECRET/);
  });

  it('refuses a short SURFACES_LINK_SECRET, naming it', () => {
    expect(() => loadConfig(SurfacesEnv, { ...BASE, SURFACES_LINK_SECRET: 'short', AUTH_JWT_SECRET: 'x'.repeat(32) })).toThrow(
      /SURFACES_LINK_SECRET: SURFACES_LINK_SECRET must be at least 16 characters/,
    );
  });
});

describe('email link tokens', () => {
  it('a signed token verifies and names its id', () => {
    const id = newTokenId();
    expect(id).toMatch(/^tok_[A-Za-z0-9_-]{22}$/);
    expect(verifyToken(SECRET, signToken(SECRET, id))).toEqual({ ok: true, id });
  });

  it('during a rotation, links signed with a previous secret still verify; new ones use the current secret', () => {
    const OLD = 'the-secret-before-rotation';
    const id = newTokenId();
    const mailedBefore = signToken(OLD, id);
    expect(verifyToken([SECRET, OLD], mailedBefore)).toEqual({ ok: true, id });
    expect(verifyToken([SECRET], mailedBefore)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyToken([SECRET, OLD], signToken(SECRET, id))).toEqual({ ok: true, id });
    const base = { ...BASE, SURFACES_LINK_SECRET: SECRET };
    expect(surfacesConfigFromEnv({ ...base, SURFACES_LINK_SECRET_PREVIOUS: `${OLD}, another-old-secret-xx` }).SURFACES_LINK_SECRET_PREVIOUS).toEqual([
      OLD,
      'another-old-secret-xx',
    ]);
    expect(surfacesConfigFromEnv(base).SURFACES_LINK_SECRET_PREVIOUS).toEqual([]);
    expect(() => surfacesConfigFromEnv({ ...base, SURFACES_LINK_SECRET_PREVIOUS: 'short' })).toThrow(/SURFACES_LINK_SECRET_PREVIOUS/);
  });

  it('ids are random', () => {
    const ids = new Set(Array.from({ length: 1000 }, newTokenId));
    expect(ids.size).toBe(1000);
  });

  it('another secret, any changed character, or a non-canonical signature is refused', () => {
    const id = newTokenId();
    const token = signToken(SECRET, id);
    expect(verifyToken('another-secret-entirely', token)).toEqual({ ok: false, reason: 'bad_signature' });
    const [, sig] = token.split('.') as [string, string];
    for (let i = 0; i < sig.length; i++) {
      const c = sig[i] === 'A' ? 'B' : 'A';
      const altered = `${id}.${sig.slice(0, i)}${c}${sig.slice(i + 1)}`;
      expect(verifyToken(SECRET, altered)).toEqual({ ok: false, reason: 'bad_signature' });
    }
    // The id is covered by the MAC as well.
    const otherId = `${id.slice(0, -1)}${id.endsWith('A') ? 'B' : 'A'}`;
    expect(verifyToken(SECRET, `${otherId}.${sig}`)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('malformed tokens are refused before any MAC', () => {
    const good = signToken(SECRET, newTokenId());
    for (const bad of [
      '',
      'tok_',
      good.split('.')[0]!,
      `${good}.`,
      `${good}x`,
      ` ${good}`,
      good.replace('.', '..'),
      good.replace('tok_', 'tk_'),
      'x'.repeat(500),
    ]) {
      expect(verifyToken(SECRET, bad)).toEqual({ ok: false, reason: 'malformed' });
    }
  });
});

describe('token state', () => {
  const now = new Date('2026-11-22T12:00:00.000Z');
  const row = (over: Partial<ActionTokenRow>): ActionTokenRow => ({
    id: 'tok_x',
    org_id: 'o',
    decision_id: 'dec_x',
    approver_email: 'a@example.com',
    action: 'approve',
    expires_at: new Date(now.getTime() + 60_000),
    created_at: now,
    used_at: null,
    used_result: null,
    ...over,
  });

  it('usable, expired at its deadline, used once settled, used while a claim is fresh, usable again once a claim is stale', () => {
    expect(tokenState(row({}), now)).toBe('usable');
    expect(tokenState(row({ expires_at: now }), now)).toBe('expired');
    expect(tokenState(row({ used_at: now, used_result: 'recorded:APPROVED', expires_at: new Date(0) }), now)).toBe('used');
    expect(tokenState(row({ used_at: new Date(now.getTime() - 1000) }), now)).toBe('used');
    expect(tokenState(row({ used_at: new Date(now.getTime() - STALE_CLAIM_MS - 1) }), now)).toBe('usable');
    expect(tokenState(row({ used_at: new Date(now.getTime() - STALE_CLAIM_MS - 1), used_result: 'already_voted' }), now)).toBe('used');
  });
});

describe('html escaping', () => {
  it('escapes the five characters that matter in content and attributes', () => {
    expect(esc(`<script>alert("x")</script> & 'y'`)).toBe('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;');
    expect(esc(null)).toBe('');
    expect(esc(42)).toBe('42');
  });
});
