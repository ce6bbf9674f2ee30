import {
  ApproversEndpoints,
  DURABLE,
  EVENT,
  batchConsumerOf,
  OFF_PATH_LINGER_MS,
  ON_PATH_LINGER_MS,
  deliveriesTotal,
  resumePayloadOf,
  type CachedCalls,
  type DomainEvent,
  type EventSubject,
  type OrgCache,
} from '@approvals/shared';
import { escalationTarget, initialTargets, pushTargets, withPersonalChannels } from '../domain/plan';
import type { PeopleStore } from '../store/people.store';
import type { PersonalChannels } from '../domain/plan';
import type { DeliveriesStore, NewDelivery } from '../store/deliveries.store';
import type { DeliveryRow } from '../providers/provider';
import { CALLBACK_CHANNEL, type CallbackPayload } from '../providers/callbacks';

/** People notifications give up after a day of retries; engine resumes keep going for days. */
export const NOTIFY_MAX_ATTEMPTS = 12;
export const RESUME_MAX_ATTEMPTS = 100;
/**
 * A callback is retried for about a day: its backoff is capped at an hour
 * (CALLBACK_RETRY_CAP_MS), so 12 attempts take about an hour and 23 more the rest of the day.
 */
export const CALLBACK_MAX_ATTEMPTS = 35;

/**
 * Plans deliveries from decision events. Planning writes rows (idempotent on event,
 * channel and target), then the worker sends them: those it has room for at once (written
 * already claimed), the rest when it claims them. So an event is acked once its
 * deliveries are durable, and a crash between the two loses nothing.
 */
export function notifierConsumers(deps: {
  store: DeliveriesStore;
  people: PeopleStore;
  /** The policies service's approver records, cached until it announces a change. */
  approvers: CachedCalls;
  /** Contact methods and push devices, cached until this service announces a change. */
  personal: OrgCache<Map<string, PersonalChannels>>;
  /** The delivery worker: woken for rows left to claim, handed the rows planned already claimed. */
  worker: { wake(): void; free(): number; take(rows: DeliveryRow[]): void };
  /** Why a channel cannot send at all for an org (not configured, no engine), or null. */
  unavailable?: (channel: string, org: string) => Promise<string | null>;
}) {
  const { store } = deps;
  /** The approvers as the notifier reaches them: their record, with their own contact methods and push devices. */
  const lookup = async (org: string, emails: string[]) => {
    const [{ approvers }, personal] = await Promise.all([
      deps.approvers.call(ApproversEndpoints.lookup, org, { org, emails }),
      deps.personal.get(org, emails.join('\u0000'), () => deps.people.personalChannels(org, emails)),
    ]);
    return approvers.map((a) => ({ a: withPersonalChannels(a, personal.get(a.email)), push: pushTargets(a, personal.get(a.email)) }));
  };
  // A delivery on a channel that cannot send at all is recorded skipped as it is planned:
  // no claim, no send attempt, no second transaction. So is a notice to a person when SMTP
  // is not configured, the resume of a decision whose caller polls (api, mcp), and an
  // engine event of an org with no such engine (its `notification.skipped` written with
  // the row).
  const plan = async (rows: NewDelivery[]) => {
    const planned = await Promise.all(rows.map(async (r) => ({ ...r, skipReason: (await deps.unavailable?.(r.channel, r.org)) ?? null })));
    // As many as the worker has free slots are written already claimed and sent at once;
    // the rest wait for its claim.
    const toSend = planned.filter((r) => !r.skipReason).length;
    const { inserted, held } = await store.plan(planned, deps.worker.free());
    if (held.length) deps.worker.take(held);
    if (inserted > held.length && toSend > held.length) deps.worker.wake();
    for (const r of planned) if (r.skipReason) deliveriesTotal.inc({ channel: r.channel, outcome: 'skipped' });
  };

  /**
   * A consumer whose events each become delivery rows: one at a time, its rows are
   * planned; the events waiting together are planned in one statement (the plan is keyed
   * by event, channel and target, so a batch is the same as its events one by one).
   *
   * Notices of a decision and its engine's resume or callback are on the path someone
   * waits on (a person for the mail, a workflow for its resume: issue 43 holds both under
   * 300 ms at p99): a batch waits up to ON_PATH_LINGER_MS (20 ms) for more. A mail about a
   * person's own record (`offPath`) waits up to OFF_PATH_LINGER_MS (100 ms).
   */
  const planner = <S extends EventSubject>(
    durable: string,
    subject: S,
    rowsOf: (event: DomainEvent<S>) => Promise<NewDelivery[]>,
    opts: { offPath?: boolean } = {},
  ) => {
    // Each row keeps its event's trace: the send (maybe much later) continues it.
    const tracedRowsOf = async (event: DomainEvent<S>) => (await rowsOf(event)).map((r) => ({ ...r, traceparent: event.traceparent ?? null }));
    return batchConsumerOf(durable, subject, async (events: DomainEvent<S>[]) => plan((await Promise.all(events.map(tracedRowsOf))).flat()), {
      lingerMs: opts.offPath ? OFF_PATH_LINGER_MS : ON_PATH_LINGER_MS,
    });
  };

  return [
    // An admin set or verified someone else's endpoint: the approver hears of it by mail
    // (one row per event: the planner's key makes a redelivery plan nothing twice).
    planner(
      DURABLE.notifierApproverChanged,
      EVENT.approverChanged,
      async (event) => {
        const d = event.data;
        if (!d.mailNotice) return [];
        const payload = {
          approver: d.email,
          what: d.channel ?? d.surface ?? 'endpoint',
          actorLabel: d.actorLabel,
          before: d.before ?? null,
          after: d.after ?? null,
        };
        return [
          {
            org: event.org,
            decisionId: d.approverId,
            eventId: event.id,
            kind: 'account',
            channel: 'email',
            target: d.email,
            payload,
            maxAttempts: NOTIFY_MAX_ATTEMPTS,
          },
        ];
      },
      { offPath: true },
    ),
    planner(DURABLE.notifierRunRequested, EVENT.runRequested, async (event) => {
      const d = event.data;
      return [
        {
          org: event.org,
          decisionId: d.runId,
          eventId: event.id,
          kind: 'run',
          channel: d.engine,
          target: d.engine,
          payload: { workflowId: d.workflowId, runId: d.runId, input: d.input, timeoutSec: d.timeoutSec ?? null },
          maxAttempts: RESUME_MAX_ATTEMPTS,
        },
      ];
    }),
    planner(DURABLE.notifierDecisionCreated, EVENT.decisionCreated, async (event) => {
      const d = event.data;
      const route = d.route;
      const rows: NewDelivery[] = [];
      for (const { a, push } of await lookup(event.org, d.approvers)) {
        for (const t of [...initialTargets(a, route, d.plan.strategy), ...push]) {
          rows.push({
            org: event.org,
            decisionId: d.decisionId,
            eventId: event.id,
            kind: 'notify',
            channel: t.channel,
            target: t.target,
            payload: { approver: a.email },
            maxAttempts: NOTIFY_MAX_ATTEMPTS,
          });
        }
      }
      return rows;
    }),
    planner(DURABLE.notifierDecisionReminded, EVENT.decisionReminded, async (event) => {
      const d = event.data;
      const route = d.route;
      const rows: NewDelivery[] = [];
      for (const { a, push } of await lookup(event.org, d.to)) {
        // A reminder reaches the person the way the first notice did: every verified
        // channel (fanout), or the first channel of an escalate route; push as well.
        for (const t of [...initialTargets(a, route, route?.strategy ?? 'fanout'), ...push]) {
          rows.push({
            org: event.org,
            decisionId: d.decisionId,
            eventId: event.id,
            kind: 'remind',
            channel: t.channel,
            target: t.target,
            payload: { approver: a.email },
            maxAttempts: NOTIFY_MAX_ATTEMPTS,
          });
        }
      }
      return rows;
    }),
    planner(DURABLE.notifierDecisionEscalated, EVENT.decisionEscalated, async (event) => {
      const d = event.data;
      const route = d.route;
      const rows: NewDelivery[] = [];
      for (const { a, push } of await lookup(event.org, d.to)) {
        const t = escalationTarget(a, route, d.step);
        for (const p of push)
          rows.push({
            org: event.org,
            decisionId: d.decisionId,
            eventId: event.id,
            kind: 'escalate',
            channel: p.channel,
            target: p.target,
            payload: { approver: a.email, step: d.step },
            maxAttempts: NOTIFY_MAX_ATTEMPTS,
          });
        if (t)
          rows.push({
            org: event.org,
            decisionId: d.decisionId,
            eventId: event.id,
            kind: 'escalate',
            channel: t.channel,
            target: t.target,
            payload: { approver: a.email, step: d.step },
            maxAttempts: NOTIFY_MAX_ATTEMPTS,
          });
      }
      return rows;
    }),
    // A caller's callback: the decisions service wrote the event, with its payload, only for decisions opened with a callbackUrl.
    planner(DURABLE.notifierDecisionCallback, EVENT.decisionCallback, async (event) => {
      const d = event.data;
      const payload: CallbackPayload = { url: d.url, type: 'decision.resolved', data: d.payload };
      return [
        {
          org: event.org,
          decisionId: d.decisionId,
          eventId: event.id,
          kind: 'callback',
          channel: CALLBACK_CHANNEL,
          target: d.url,
          payload: payload as unknown as Record<string, unknown>,
          maxAttempts: CALLBACK_MAX_ATTEMPTS,
        },
      ];
    }),
    planner(DURABLE.notifierDecisionResolved, EVENT.decisionResolved, async (event) => {
      const d = event.data;
      // The same payload for every engine (and a caller's callback).
      const payload = resumePayloadOf(d);
      return [
        {
          org: event.org,
          decisionId: d.decisionId,
          eventId: event.id,
          kind: 'resume',
          channel: d.engine,
          target: d.engine,
          payload,
          maxAttempts: RESUME_MAX_ATTEMPTS,
        },
      ];
    }),
  ];
}
