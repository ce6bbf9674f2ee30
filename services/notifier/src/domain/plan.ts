import { backoffDelayMs } from '@approvals/shared';
import type { ResolvedApprover } from '@approvals/shared';

export interface Route {
  channels: string[];
  strategy?: string;
  escalateAfterSec?: number;
}

export interface Target {
  channel: string;
  target: string;
}

/**
 * An approver's channels in the order they are tried: the policy route's channel order
 * first (for the channels the approver has), then the approver's other channels. Only
 * verified channels are used: an unproven endpoint is never messaged. A bare email is an
 * approver verified for email.
 */
export function orderedTargets(a: ResolvedApprover, route: Route | null): Target[] {
  // A chatA channel registered without an endpoint is resolved by email in the org's Slack
  // workspace (users.lookupByEmail) when it is sent: Slack's own directory is the proof.
  const byEmail = (c: ResolvedApprover['channels'][number]) => c.channel === 'chatA' && !c.endpoint && c.status !== 'failed';
  const verified = a.channels.filter((c) => c.status === 'verified' || byEmail(c));
  const endpoint = (c: (typeof verified)[number]) => c.endpoint ?? (c.channel === 'email' ? a.email : byEmail(c) ? `email:${a.email}` : null);
  const usable = verified.filter((c) => endpoint(c) !== null);
  const order = route?.channels ?? [];
  const rank = (ch: string) => {
    const i = order.indexOf(ch);
    return i === -1 ? order.length : i;
  };
  return [...usable].sort((x, y) => rank(x.channel) - rank(y.channel)).map((c) => ({ channel: c.channel, target: endpoint(c)! }));
}

/** Who gets what now: fanout sends on every channel; escalate starts with the first. */
export function initialTargets(a: ResolvedApprover, route: Route | null): Target[] {
  if (a.disabled) return [];
  const ordered = orderedTargets(a, route);
  return route?.strategy === 'escalate' ? ordered.slice(0, 1) : ordered;
}

/** Escalation step n (1-based after the first channel): the approver's next channel, if any. */
export function escalationTarget(a: ResolvedApprover, route: Route | null, step: number): Target | undefined {
  if (a.disabled) return undefined;
  return orderedTargets(a, route)[step];
}

/** Delay before a failed delivery's next attempt (attempt 1 is the first retry): the tree's one backoff, jittered. */
export function retryDelayMs(attempt: number, baseMs = 1000, maxMs = 10 * 60_000, random?: () => number): number {
  return backoffDelayMs(attempt, { baseMs, maxMs, random });
}
