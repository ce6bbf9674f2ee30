import { expectOk, OutboundError, type DecisionView, type OutboundClient } from '@approvals/shared';

export interface DeliveryRow {
  id: string;
  org_id: string;
  decision_id: string;
  event_id: string;
  /** `run`: the engine event that starts a workflow run (decision_id holds the run id). */
  kind: 'notify' | 'remind' | 'escalate' | 'resume' | 'run';
  channel: string;
  target: string;
  payload: Record<string, unknown>;
  attempts: number;
  max_attempts: number;
}

export type SendResult = { status: 'sent'; detail?: string } | { status: 'skipped'; reason: string };

export interface SendContext {
  /** The decision as it reads now (fresh, so a mail never shows stale state). */
  decision(): Promise<DecisionView>;
}

/**
 * One interface for every channel, keyed by channel. A deliberate skip (not configured,
 * not built yet) is a result, not an exception; a throw means "try again later".
 */
export interface ChannelProvider {
  readonly channel: string;
  send(d: DeliveryRow, ctx: SendContext): Promise<SendResult>;
}

export class DeliveryError extends Error {
  override name = 'DeliveryError';
  constructor(
    message: string,
    /** A permanent failure (4xx other than 408/429): retrying cannot help. */
    readonly permanent = false,
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
    const res = await http.send(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: raw ?? JSON.stringify(body) });
    return expectOk(res, `POST ${url}`).body;
  } catch (err) {
    if (err instanceof OutboundError) throw new DeliveryError(err.kind === 'http' ? err.message : `POST ${url} failed: ${err.message}`, err.permanent);
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
