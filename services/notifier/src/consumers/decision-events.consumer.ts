import { ApproversEndpoints, DURABLE, DecisionCreatedData, DecisionResolvedData, EVENT, PoisonMessage, type Bus, type EventEnvelope } from '@approvals/shared';
import { z } from 'zod';
import { escalationTarget, initialTargets, type Route } from '../domain/plan';
import type { DeliveriesStore, NewDelivery } from '../store/deliveries.store';

/** People notifications give up after a day of retries; engine resumes keep going for days. */
export const NOTIFY_MAX_ATTEMPTS = 12;
export const RESUME_MAX_ATTEMPTS = 100;

const RunRequested = z.object({ runId: z.string(), workflowId: z.string(), engine: z.string(), input: z.record(z.string(), z.unknown()) });
const StepData = z.object({ decisionId: z.string(), to: z.array(z.string()), step: z.number().optional(), route: z.unknown().optional() });

function parse<T>(schema: z.ZodType<T>, event: EventEnvelope): T {
  const r = schema.safeParse(event.data);
  if (!r.success) throw new PoisonMessage(`${event.type} payload does not parse: ${r.error.message}`);
  return r.data;
}

/**
 * Plans deliveries from decision events. Planning only writes rows (idempotent on event,
 * channel and target); the worker sends them. So an event is acked once its deliveries
 * are durable, and a crash between the two loses nothing.
 */
export function notifierConsumers(deps: { store: DeliveriesStore; bus: Bus; wake: () => void }) {
  const { store, bus } = deps;
  const lookup = async (org: string, emails: string[]) => (await bus.call(ApproversEndpoints.lookup, { org, emails })).approvers;
  const plan = async (rows: NewDelivery[]) => {
    if ((await store.plan(rows)) > 0) deps.wake();
  };

  return [
    {
      durable: DURABLE.notifierRunRequested,
      filterSubject: EVENT.runRequested,
      handler: async (event: EventEnvelope) => {
        const d = parse(RunRequested, event);
        await plan([{ org: event.org, decisionId: d.runId, eventId: event.id, kind: 'run', channel: d.engine, target: d.engine, payload: { workflowId: d.workflowId, runId: d.runId, input: d.input }, maxAttempts: RESUME_MAX_ATTEMPTS }]);
      },
    },
    {
      durable: DURABLE.notifierDecisionCreated,
      filterSubject: EVENT.decisionCreated,
      handler: async (event: EventEnvelope) => {
        const d = parse(DecisionCreatedData, event);
        const route = d.route as Route | null;
        const rows: NewDelivery[] = [];
        for (const a of await lookup(event.org, d.approvers)) {
          for (const t of initialTargets(a, route)) {
            rows.push({ org: event.org, decisionId: d.decisionId, eventId: event.id, kind: 'notify', channel: t.channel, target: t.target, payload: { approver: a.email }, maxAttempts: NOTIFY_MAX_ATTEMPTS });
          }
        }
        await plan(rows);
      },
    },
    {
      durable: DURABLE.notifierDecisionReminded,
      filterSubject: EVENT.decisionReminded,
      handler: async (event: EventEnvelope) => {
        const d = parse(StepData, event);
        const route = (d.route ?? null) as Route | null;
        const rows: NewDelivery[] = [];
        for (const a of await lookup(event.org, d.to)) {
          // A reminder reaches the person the way the first notice did: every verified
          // channel (fanout), or the first channel of an escalate route.
          for (const t of initialTargets(a, route)) {
            rows.push({ org: event.org, decisionId: d.decisionId, eventId: event.id, kind: 'remind', channel: t.channel, target: t.target, payload: { approver: a.email }, maxAttempts: NOTIFY_MAX_ATTEMPTS });
          }
        }
        await plan(rows);
      },
    },
    {
      durable: DURABLE.notifierDecisionEscalated,
      filterSubject: EVENT.decisionEscalated,
      handler: async (event: EventEnvelope) => {
        const d = parse(StepData, event);
        const route = (d.route ?? null) as Route | null;
        const rows: NewDelivery[] = [];
        for (const a of await lookup(event.org, d.to)) {
          const t = escalationTarget(a, route, d.step ?? 1);
          if (t) rows.push({ org: event.org, decisionId: d.decisionId, eventId: event.id, kind: 'escalate', channel: t.channel, target: t.target, payload: { approver: a.email, step: d.step ?? 1 }, maxAttempts: NOTIFY_MAX_ATTEMPTS });
        }
        await plan(rows);
      },
    },
    {
      durable: DURABLE.notifierDecisionResolved,
      filterSubject: EVENT.decisionResolved,
      handler: async (event: EventEnvelope) => {
        const d = parse(DecisionResolvedData, event);
        // The same payload for every engine; `approved` only for APPROVED, so EXPIRED and
        // REJECTED take the rejection branch.
        const payload = {
          decisionId: d.decisionId,
          externalRunId: d.externalRunId,
          stepRef: d.stepRef,
          workflowRef: d.workflowRef,
          status: d.status,
          approved: d.status === 'APPROVED',
          decidedBy: d.decidedBy,
          note: d.note,
          responseValue: d.responseValue ?? null,
          output: d.output ?? null,
          policyVersion: d.policyVersion,
        };
        await plan([{ org: event.org, decisionId: d.decisionId, eventId: event.id, kind: 'resume', channel: d.engine, target: d.engine, payload, maxAttempts: RESUME_MAX_ATTEMPTS }]);
      },
    },
  ];
}
