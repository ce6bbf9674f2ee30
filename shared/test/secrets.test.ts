import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { SecretBox, SecretBoxError, parseSecretsKey } from '@approvals/shared';

const key = () => randomBytes(32);

describe('SecretBox: secrets sealed at rest (AES-256-GCM)', () => {
  it('seals and opens; the sealed form reveals nothing of the value and differs every time', () => {
    const box = new SecretBox(key());
    const a = box.seal('sk-live-123', 'llm-api-key:org_a');
    const b = box.seal('sk-live-123', 'llm-api-key:org_a');
    expect(a).not.toContain('sk-live');
    expect(a).not.toBe(b);
    expect(SecretBox.isSealed(a)).toBe(true);
    expect(SecretBox.isSealed('sk-live-123')).toBe(false);
    expect(box.open(a, 'llm-api-key:org_a')).toBe('sk-live-123');
  });

  it("binds a value to its context: it does not open as another org's or another field's", () => {
    const box = new SecretBox(key());
    const sealed = box.seal('secret', 'llm-api-key:org_a');
    expect(() => box.open(sealed, 'llm-api-key:org_b')).toThrow(SecretBoxError);
    expect(() => box.open(sealed, 'chat-token:org_a')).toThrow(SecretBoxError);
  });

  it('refuses a tampered value and a key it does not have', () => {
    const box = new SecretBox(key());
    const sealed = box.seal('secret', 'c');
    const parts = sealed.split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0] ^= 1;
    expect(() => box.open([...parts.slice(0, 3), body.toString('base64url')].join('.'), 'c')).toThrow(/does not open/);
    expect(() => new SecretBox(key()).open(sealed, 'c')).toThrow(/SECRETS_KEY_PREVIOUS/);
  });

  it('rotates: values sealed under a previous key open while it is listed; new values use the current key', () => {
    const oldKey = key();
    const sealedOld = new SecretBox(oldKey).seal('secret', 'c');
    const rotated = new SecretBox(key(), [oldKey]);
    expect(rotated.open(sealedOld, 'c')).toBe('secret');
    expect(rotated.isCurrent(sealedOld)).toBe(false);
    expect(rotated.isCurrent(rotated.seal('secret', 'c'))).toBe(true);
  });

  it('reads keys as base64 or hex, 32 bytes only', () => {
    const k = key();
    expect(parseSecretsKey(k.toString('base64')).equals(k)).toBe(true);
    expect(parseSecretsKey(k.toString('hex')).equals(k)).toBe(true);
    expect(() => parseSecretsKey('too-short')).toThrow(/32 bytes/);
    const box = SecretBox.fromConfig({ SECRETS_KEY: k.toString('base64'), SECRETS_KEY_PREVIOUS: `${key().toString('hex')}, ${key().toString('base64')}` });
    expect(box.open(box.seal('x', 'c'), 'c')).toBe('x');
  });
});
