import { currentTraceparent } from '@approvals/shared';
import { expectOk, OutboundError, type ChatNotice, type OutboundClient } from '@approvals/shared';
import type { PushContent } from './push';

export interface DeliveryRow {
  id: string;
  org_id: string;
  decision_id: string;
  event_id: string;
  /**
   * `run`: the engine event that starts a workflow run (decision_id holds the run id).
   * `account`: a mail to an approver about their own record (decision_id holds the approver id).
   * `sign_in`: a mail holding a sign-in link (decision_id holds the link's id; its payload the sealed link).
   */
  kind: 'notify' | 'remind' | 'escalate' | 'resume' | 'run' | 'account' | 'callback' | 'sign_in';
  channel: string;
  target: string;
  payload: Record<string, unknown>;
  attempts: number;
  max_attempts: number;
  traceparent?: string | null;
}

/** `httpStatus`: the receiver's answer, where the channel has one (a callback's timeline entry shows it). */
export type SendResult = { status: 'sent'; detail?: string; httpStatus?: number } | { status: 'skipped'; reason: string };

/** A notice to a person, rendered by the template module: the provider sends it as is. */
export type PersonMessage =
  /** `id` is the delivery id: the mail's Message-ID is made from it, the same on every retry. */
  | { channel: 'email'; to: string; id: string; subject: string; html: string; text: string; headers: Record<string, string> }
  /** `id` is the delivery id: the Standard Webhooks `webhook-id` a receiver dedupes on. */
  | { channel: 'webhook'; to: string; id: string; body: string }
  | { channel: 'sms'; to: string; body: string; idempotencyKey: string }
  | { channel: 'phone'; to: string; message: string; idempotencyKey: string }
  /** `to`: the chat user id, or `email:<address>` (chatA resolves it). The surfaces service posts it. */
  | { channel: 'chatA' | 'chatB'; to: string; org: string; deliveryId: string; decisionId: string; approverEmail: string; notice: ChatNotice }
  /** `to`: the push device id (its token and platform are looked up at send time). */
  | { channel: 'push'; to: string; content: PushContent };

/** An engine event: a decision's verdict (resume), a workflow run to start, or a caller's callback. */
export interface EngineMessage {
  org: string;
  kind: 'resume' | 'run' | 'callback';
  /** The event id: the idempotency key the receiver dedupes on (at-least-once delivery). */
  eventId: string;
  payload: Record<string, unknown>;
}

export type OutgoingMessage = PersonMessage | EngineMessage;

/**
 * One interface for every channel, keyed by channel. A provider only sends what it is
 * given; `unavailable` says why it cannot send at all (not configured, not built, no
 * engine for the org), and the delivery is recorded skipped with that reason: when it is
 * planned, and again when it is sent (a setting may have changed in between). A throw means "try again later"
 * (DeliveryError with `permanent` when it cannot help).
 */
export interface ChannelProvider<M extends OutgoingMessage = OutgoingMessage> {
  readonly channel: string;
  /** Whether this channel notifies people (decision notices) or engines. */
  readonly audience: 'person' | 'engine';
  /** Why it cannot send for this org at all (read from caches, never over the network), or null. */
  unavailable(org: string): string | null | Promise<string | null>;
  send(message: M): Promise<SendResult>;
}

export class DeliveryError extends Error {
  override name = 'DeliveryError';
  constructor(
    message: string,
    /** A permanent failure (4xx other than 408/429): retrying cannot help. */
    readonly permanent = false,
    /** The receiver's HTTP status, when it answered. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/**
 * POSTs JSON through the shared outbound client; a failure or a non-2xx answer is a
 * DeliveryError (permanent for a refused address and for 4xx except 408 and 429).
 */
export async function postJson(http: OutboundClient, url: string, body: unknown, headers: Record<string, string> = {}, raw?: string): Promise<string> {
  try {
    // The receiver (an engine) can continue the decision's trace.
    const traceparent = currentTraceparent();
    const res = await http.send(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(traceparent ? { traceparent } : {}), ...headers },
      body: raw ?? JSON.stringify(body),
    });
    return expectOk(res, `POST ${url}`).body;
  } catch (err) {
    if (err instanceof OutboundError)
      throw new DeliveryError(err.kind === 'http' ? err.message : `POST ${url} failed: ${err.message}`, err.permanent, err.status);
    throw err;
  }
}

/**
 * The two outbound clients a provider may use: `tenant` for URLs people set (approver
 * webhooks, org settings), behind the private-network guard; `trusted` for URLs the
 * deployment set in its environment (engines, SMS/phone providers).
 */
export interface Outbound {
  tenant: OutboundClient;
  trusted: OutboundClient;
}
