import { currentTraceparent, expectOk, OutboundError, type OutboundClient } from '@approvals/shared';
import { DeliveryError, type ChannelProvider, type EngineMessage } from './provider';
import { signStandardWebhook } from './standard-webhooks';

/** The channel of a caller's callback (`callbackUrl` on create). */
export const CALLBACK_CHANNEL = 'callback';

/** What a callback delivery row carries: where it goes and what it says. */
export interface CallbackPayload {
  url: string;
  type: 'decision.resolved';
  data: Record<string, unknown>;
}

/**
 * Callbacks: `{type: "decision.resolved", data}` POSTed to the caller's URL through the
 * guarded outbound client, signed per Standard Webhooks with the org's callback secrets
 * (`webhook-id` = the event id, the same on every retry). Every answer other than a 2xx
 * is retried ("until a 2xx"), an address the guard refuses is not; an org without a
 * secret yet is retried too, so a secret set within the day still gets the callback out.
 */
export function callbackProvider(deps: { http: OutboundClient; signingSecrets: (org: string) => Promise<string[]> }): ChannelProvider<EngineMessage> {
  return {
    channel: CALLBACK_CHANNEL,
    audience: 'engine',
    unavailable: () => null,
    async send(m: EngineMessage) {
      const { url, type, data } = m.payload as unknown as CallbackPayload;
      const secrets = await deps.signingSecrets(m.org);
      if (secrets.length === 0) throw new DeliveryError('no callback secret is set for this org: POST /v1/settings/callbacks/rotate makes one', false);
      const body = JSON.stringify({ type, data });
      const traceparent = currentTraceparent();
      try {
        const res = await deps.http.send(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(traceparent ? { traceparent } : {}),
            ...signStandardWebhook(secrets, m.eventId, Math.floor(Date.now() / 1000), body),
          },
          body,
        });
        expectOk(res, `POST ${url}`);
        return { status: 'sent', httpStatus: res.status };
      } catch (err) {
        if (!(err instanceof OutboundError)) throw err;
        // A receiver's answer is retried whatever it was; a refused address never.
        throw new DeliveryError(
          err.kind === 'http' ? err.message : `POST ${url} failed: ${err.message}`,
          err.kind === 'http' ? false : err.permanent,
          err.status,
        );
      }
    },
  };
}
