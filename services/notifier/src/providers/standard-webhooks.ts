import { Webhook } from 'svix';

/**
 * Standard Webhooks signing (`webhook-id`, `webhook-timestamp`, `webhook-signature:
 * v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`) through `svix`'s `Webhook`,
 * so any Standard Webhooks verifier (svix, `standardwebhooks`) accepts it. A `whsec_`
 * secret is base64 after the prefix; any other secret is used as UTF-8 bytes. Several
 * secrets (a rotation's current and previous) sign side by side: their signatures
 * space-separated in one header, as the standard allows, so a receiver that knows either
 * accepts it.
 */
export function signStandardWebhook(secret: string | string[], id: string, timestampSec: number, body: string): Record<string, string> {
  const at = new Date(timestampSec * 1000);
  const signatures = (Array.isArray(secret) ? secret : [secret]).map((s) => {
    const key = s.startsWith('whsec_') ? Buffer.from(s.slice(6), 'base64') : Buffer.from(s, 'utf8');
    return new Webhook(key, { format: 'raw' }).sign(id, at, body);
  });
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSec), 'webhook-signature': signatures.join(' ') };
}
