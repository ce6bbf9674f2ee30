import { Webhook } from 'svix';

/**
 * Standard Webhooks signing (`webhook-id`, `webhook-timestamp`, `webhook-signature:
 * v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`) through `svix`'s `Webhook`,
 * so any Standard Webhooks verifier (svix, `standardwebhooks`) accepts it. A `whsec_`
 * secret is base64 after the prefix; any other secret is used as UTF-8 bytes.
 */
export function signStandardWebhook(secret: string, id: string, timestampSec: number, body: string): Record<string, string> {
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
  const signature = new Webhook(key, { format: 'raw' }).sign(id, new Date(timestampSec * 1000), body);
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSec), 'webhook-signature': signature };
}
