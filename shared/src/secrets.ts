import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets at rest (model API keys, chat bot tokens, signing keys, engine secrets):
 * AES-256-GCM with a key from configuration. A sealed value reads
 * `sb1.<key id>.<iv>.<ciphertext+tag>` (base64url), so a value sealed under an older key
 * still opens while that key is listed in SECRETS_KEY_PREVIOUS (rotation without downtime).
 * Each value is bound to its purpose (`context`, e.g. `llm-api-key:<org>`): a ciphertext
 * copied into another org's row, or another field, does not open.
 *
 * The database and the bus only ever carry sealed values; the service that uses a secret
 * opens it at the moment of use.
 */
export class SecretBox {
  private readonly keys: Array<{ id: string; key: Buffer }>;

  constructor(current: Buffer, previous: Buffer[] = []) {
    this.keys = [current, ...previous].map((key) => ({ id: keyId(key), key }));
  }

  /** From `SECRETS_KEY` (32 bytes, base64 or hex) and comma-separated `SECRETS_KEY_PREVIOUS`. */
  static fromConfig(c: { SECRETS_KEY: string; SECRETS_KEY_PREVIOUS?: string }): SecretBox {
    const previous = (c.SECRETS_KEY_PREVIOUS ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map(parseSecretsKey);
    return new SecretBox(parseSecretsKey(c.SECRETS_KEY), previous);
  }

  seal(plain: string, context: string): string {
    const { id, key } = this.keys[0]!;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `sb1.${id}.${iv.toString('base64url')}.${body.toString('base64url')}`;
  }

  /** The plain value; throws when it was sealed for another context or with an unknown key. */
  open(sealed: string, context: string): string {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== 'sb1') throw new SecretBoxError('not a sealed value');
    const entry = this.keys.find((k) => k.id === parts[1]);
    if (!entry) throw new SecretBoxError(`sealed with a key that is not configured (key id ${parts[1]}): add it to SECRETS_KEY_PREVIOUS`);
    const iv = Buffer.from(parts[2]!, 'base64url');
    const body = Buffer.from(parts[3]!, 'base64url');
    if (iv.length !== 12 || body.length < 16) throw new SecretBoxError('not a sealed value');
    try {
      const decipher = createDecipheriv('aes-256-gcm', entry.key, iv);
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(body.subarray(body.length - 16));
      return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretBoxError('the sealed value does not open (tampered, or sealed for something else)');
    }
  }

  /** True for a value this format produced (an older plaintext row is not). */
  static isSealed(value: unknown): value is string {
    return typeof value === 'string' && /^sb1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(value);
  }

  /** Sealed under the current key (a value under a previous key should be re-sealed). */
  isCurrent(sealed: string): boolean {
    return sealed.split('.')[1] === this.keys[0]!.id;
  }
}

export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/** 32 bytes, as base64 (44 chars) or hex (64 chars). */
export function parseSecretsKey(text: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-f]{64}$/i.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (key.length !== 32) throw new SecretBoxError('a secrets key must be 32 bytes, written as base64 or hex (e.g. `openssl rand -base64 32`)');
  return key;
}
