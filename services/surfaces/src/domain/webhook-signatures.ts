import { createHmac, timingSafeEqual } from 'node:crypto';
import Stripe from 'stripe';
import { Webhook, WebhookVerificationError } from 'svix';

/**
 * Signature checks of the inbound webhooks, over the raw body, with each provider's own
 * library where one exists. Every function accepts a list of secrets: during a rotation
 * the old and the new are both configured, and either one passes.
 */

const header = (headers: Record<string, string>, name: string) => headers[name.toLowerCase()] ?? headers[name];

/** DocuSign Connect: `X-DocuSign-Signature-1..5` = base64(HMAC-SHA256(key, raw body)); any header, any key. */
export function docusignSignatureValid(keys: string[], headers: Record<string, string>, rawBody: Buffer): boolean {
  const given: Buffer[] = [];
  for (let i = 1; i <= 5; i++) {
    const v = header(headers, `x-docusign-signature-${i}`);
    if (v) given.push(Buffer.from(v, 'base64'));
  }
  if (given.length === 0) return false;
  for (const key of keys) {
    const expected = createHmac('sha256', key).update(rawBody).digest();
    if (given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))) return true;
  }
  return false;
}

export type Verified<T> = { ok: true; body: T } | { ok: false; reason: 'signature' | 'malformed' };

/** Svix (the identity provider's webhooks): `svix-id`, `svix-timestamp` (5 min), `svix-signature`, through the `svix` library. */
export function svixVerified(secrets: string[], headers: Record<string, string>, rawBody: string): Verified<unknown> {
  const h = {
    'svix-id': header(headers, 'svix-id') ?? '',
    'svix-timestamp': header(headers, 'svix-timestamp') ?? '',
    'svix-signature': header(headers, 'svix-signature') ?? '',
  };
  if (!h['svix-id'] || !h['svix-timestamp'] || !h['svix-signature']) return { ok: false, reason: 'signature' };
  for (const secret of secrets) {
    try {
      return { ok: true, body: new Webhook(secret).verify(rawBody, h) };
    } catch (err) {
      // Signed, but not JSON.
      if (err instanceof SyntaxError) return { ok: false, reason: 'malformed' };
      if (!(err instanceof WebhookVerificationError)) return { ok: false, reason: 'signature' };
    }
  }
  return { ok: false, reason: 'signature' };
}

// constructEvent needs no API call; the key is never used to reach Stripe.
const stripe = new Stripe('sk_webhook_verification_only');

/** Stripe: `Stripe-Signature` (`t=…,v1=…`), 300 s tolerance, through the `stripe` library's verifier. */
export function stripeVerified(secrets: string[], headers: Record<string, string>, rawBody: Buffer): Verified<Stripe.Event> {
  const sig = header(headers, 'stripe-signature');
  if (!sig) return { ok: false, reason: 'signature' };
  for (const secret of secrets) {
    try {
      return { ok: true, body: stripe.webhooks.constructEvent(rawBody, sig, secret, 300) };
    } catch (err) {
      if (err instanceof SyntaxError) return { ok: false, reason: 'malformed' };
      /* the next secret, if any */
    }
  }
  return { ok: false, reason: 'signature' };
}
