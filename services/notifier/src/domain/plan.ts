import { backoffDelayMs } from '@approvals/shared';
import type { DecisionRoute, ResolvedApprover, RouteStrategy } from '@approvals/shared';

type Route = DecisionRoute;

export interface Target {
  channel: string;
  target: string;
}

/**
 * An approver's channels in the order they are tried. When the policy route names
 * channels, those, in the route's order (an approver who has none of them is reached on
 * every channel they do have, rather than not at all); without a route, every channel.
 * Only verified channels are used: an unproven endpoint is never messaged. A bare email
 * is an approver verified for email.
 */
export function orderedTargets(a: ResolvedApprover, route: Route | null): Target[] {
  // A chatA channel registered without an endpoint is resolved by email in the org's Slack
  // workspace (users.lookupByEmail) when it is sent: Slack's own directory is the proof.
  const byEmail = (c: ResolvedApprover['channels'][number]) => c.channel === 'chatA' && !c.endpoint && c.status !== 'failed';
  const verified = a.channels.filter((c) => c.status === 'verified' || byEmail(c));
  const endpoint = (c: (typeof verified)[number]) => c.endpoint ?? (c.channel === 'email' ? a.email : byEmail(c) ? `email:${a.email}` : null);
  const usable = verified.filter((c) => endpoint(c) !== null);
  const order = route?.channels ?? [];
  const named = usable.filter((c) => order.includes(c.channel));
  const chosen = order.length > 0 && named.length > 0 ? named.sort((x, y) => order.indexOf(x.channel) - order.indexOf(y.channel)) : usable;
  return chosen.map((c) => ({ channel: c.channel, target: endpoint(c)! }));
}

/**
 * Who gets what now: fanout sends on every channel; escalate starts with the first.
 * `strategy` is the decision's (its escalation plan's, fixed by the decisions service).
 */
export function initialTargets(a: ResolvedApprover, route: Route | null, strategy: RouteStrategy): Target[] {
  if (a.disabled) return [];
  const ordered = orderedTargets(a, route);
  return strategy === 'escalate' ? ordered.slice(0, 1) : ordered;
}

/** Escalation step n (1-based after the first channel): the approver's next channel, if any. */
export function escalationTarget(a: ResolvedApprover, route: Route | null, step: number): Target | undefined {
  if (a.disabled) return undefined;
  return orderedTargets(a, route)[step];
}

/** The longest wait between two attempts at a caller's callback (other deliveries: 10 minutes). */
export const CALLBACK_RETRY_CAP_MS = 60 * 60_000;

/** Delay before a failed delivery's next attempt (attempt 1 is the first retry): the tree's one backoff, jittered. */
export function retryDelayMs(attempt: number, baseMs = 1000, maxMs = 10 * 60_000, random?: () => number): number {
  return backoffDelayMs(attempt, { baseMs, maxMs, random });
}

/** A person's own contact methods (set while signed in), as channels of their approver record. */
export interface PersonalChannels {
  sms: string | null;
  /** Active push devices when push is on (each is a delivery of its own). */
  devices: string[];
}

/**
 * The approver as the notifier reaches them: their contact methods override or add the
 * SMS number (from the next notice on; removing it stops it). A Slack id is never taken
 * from contact methods: only a chat account the person proved (linked, docs/chat.md) or
 * an admin set is on their approver record, and that record is what reaches them.
 */
export function withPersonalChannels(a: ResolvedApprover, p: PersonalChannels | undefined): ResolvedApprover {
  if (!p) return a;
  const own = [...(p.sms ? [{ channel: 'sms' as const, endpoint: p.sms, status: 'verified' as const, verifiedAt: null }] : [])];
  const replaced = new Set<string>(own.map((c) => c.channel));
  return { ...a, channels: [...a.channels.filter((c) => !replaced.has(c.channel)), ...own] };
}

/** Push goes to every active device as well, whatever the route (it is the person's own choice). */
export function pushTargets(a: ResolvedApprover, p: PersonalChannels | undefined): Target[] {
  if (a.disabled || !p) return [];
  return p.devices.map((id) => ({ channel: 'push', target: id }));
}
