import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signing: `webhook-signature: v1,<base64 HMAC-SHA256(key,
 * "<id>.<timestamp>.<body>")>`. A `whsec_` secret is base64 after the prefix; any
 * other secret is used as UTF-8 bytes.
 */
export function signStandardWebhook(secret: string, id: string, timestampSec: number, body: string): Record<string, string> {
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
  const sig = createHmac('sha256', key).update(`${id}.${timestampSec}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSec), 'webhook-signature': `v1,${sig}` };
}
