import type { DecisionView } from '@approvals/shared';

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

/** POSTs JSON; a non-2xx answer is a DeliveryError (permanent for 4xx except 408 and 429). */
export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}, raw?: string): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: raw ?? JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (err) {
    throw new DeliveryError(`POST ${url} failed: ${(err as Error).message}`);
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) {
    const permanent = res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429;
    throw new DeliveryError(`POST ${url} answered ${res.status}: ${text.slice(0, 200)}`, permanent);
  }
  return text;
}
