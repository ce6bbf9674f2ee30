import {
  AppError,
  actorLabelOf,
  actorOf,
  type ContractEngine,
  isUniqueViolation,
  idRandomOf,
  literalTargetRefusal,
  NotifierEndpoints,
  PROVIDER_LABEL,
  WORKFLOW_ENGINES,
  type Logger,
  type ReplyWarning,
  type AddressPolicy,
  type Bus,
  type CachedCalls,
  type Clock,
  type DecisionRequest,
  type NewEvent,
  type Principal,
} from '@approvals/shared';
import type { Gate, GateResult } from '../domain/gate';
import type { DecisionsStore } from '../store/decisions.store';
import { gateOf } from './create/gate-of';
import { existingReply, opening, type CreateResult, type ExistingRow, type Requester } from './create/opening';

export interface CreateDeps {
  store: DecisionsStore;
  bus: Bus;
  clock: Clock;
  /** Deployment default monthly decision quota per org; undefined = unlimited. */
  defaultMonthlyQuota?: number;
  /** Checks context contracts off the event loop, under a time limit. */
  contracts: ContractEngine;
  /** The policies service's answers, cached until it announces a change (bus/invalidation). */
  policies: CachedCalls;
  /** The outbound guard: a callbackUrl it refuses is refused at create. */
  guard: AddressPolicy;
  /**
   * The notifier's answers (is an engine configured for an org), cached until it announces
   * a change of engine settings. Without it, no `warnings` are given.
   */
  engines?: CachedCalls;
  log?: Logger;
}

/**
 * The notifier's "is this engine configured" asked once, briefly, never resent: a create
 * does not wait on it (no notifier answering, no warning, at once).
 */
const ENGINE_CONFIGURED = { ...NotifierEndpoints.engineConfigured, idempotent: false, timeoutMs: 1_000 };

const quotaExceeded = (limit: number, used: number) =>
  new AppError('quota_exceeded', `the org's monthly decision quota (${limit}) is used up`, { used, limit });

/**
 * Opening a decision: policy resolved (by policies, with its satisfiability and version
 * pin) → context contract (contract engine) → the rest of the gate (domain/gate) → one
 * transaction that inserts, counts the quota and announces. Idempotent on (org, run,
 * step): a repeat returns the first decision, even if the policy changed since.
 */
/**
 * Opening a decision: policy resolved (by policies, with its satisfiability and version
 * pin) → context contract (contract engine) → the rest of the gate (domain/gate) → one
 * statement (or, for an `exclusive` create, one transaction) that inserts, counts the
 * quota and announces. Idempotent on (org, run, step): a repeat returns the first
 * decision, even if the policy changed since. The gate is `create/gate-of.ts`, what a
 * create writes `create/opening.ts`.
 */
export function createDecisionOpener(deps: CreateDeps) {
  const { store, clock } = deps;

  async function takeQuota(tx: DecisionsStore, org: string, now: Date, events: NewEvent[]): Promise<void> {
    const taken = await tx.quota.take(org, now, deps.defaultMonthlyQuota, events);
    if (!taken.taken) throw quotaExceeded(taken.limit, taken.used);
  }

  /** The decision already opened for this run and step, as a repeat of its create answers. */
  async function existing(org: string, b: DecisionRequest): Promise<CreateResult | undefined> {
    const found = await store.decisions.findByRunStep(org, b.externalRunId, b.stepRef);
    return found ? existingReply(found) : undefined;
  }

  /**
   * A create that supersedes nothing: one statement (the store's openDecision). Undefined
   * when a create on the same run committed later while it waited; the transaction then
   * opens it with its time taken under the lock.
   */
  async function openAtOnce(
    org: string,
    b: DecisionRequest,
    gate: Gate,
    by: Requester,
    marked: string | undefined,
    found: (row: ExistingRow) => CreateResult,
  ): Promise<CreateResult | undefined> {
    const now = clock.now();
    const o = opening(org, b, gate, by, now, marked);
    const r = await store.decisions.openDecision(o.row, o.entry, o.created, now, deps.defaultMonthlyQuota);
    switch (r.outcome) {
      case 'created':
        return o.answer;
      case 'existing':
        return found(r.row);
      case 'quota':
        throw quotaExceeded(r.limit, r.used);
      case 'later':
        return undefined;
    }
  }

  /**
   * A decision whose workflow engine nobody configured opens all the same (the verdict can
   * still be read by polling), but its answer says that the resume will go nowhere, rather
   * than only the timeline, later. Asking is best effort: no answer, no warning.
   */
  async function warned(org: string, b: DecisionRequest, out: CreateResult): Promise<CreateResult> {
    if (!deps.engines || !out.body.decisionId || !(WORKFLOW_ENGINES as readonly string[]).includes(b.engine)) return out;
    const engine = b.engine as (typeof WORKFLOW_ENGINES)[number];
    let configured = true;
    try {
      configured = (await deps.engines.call(ENGINE_CONFIGURED, org, { org, engine })).configured;
    } catch (err) {
      deps.log?.debug({ err: (err as Error).message, org, engine }, 'could not ask whether the engine is configured; answered without warnings');
    }
    if (configured) return out;
    const named = engine === 'engineA' ? ', the default when a request names none' : '';
    const warning: ReplyWarning = {
      code: 'engine_not_configured',
      message: `${PROVIDER_LABEL[engine]} (${engine}${named}) is not configured for this org (PUT /v1/settings/engines) or the deployment: the decision is open, but its verdict will resume no workflow (poll it, or configure the engine)`,
    };
    return { status: out.status, body: { ...out.body, warnings: [warning] } };
  }

  return async function create(req: { org: string; principal: Principal; body: DecisionRequest; attempt?: string }): Promise<CreateResult> {
    return warned(req.org, req.body, await open(req));
  };

  async function open(req: { org: string; principal: Principal; body: DecisionRequest; attempt?: string }): Promise<CreateResult> {
    const { org, body: b } = req;
    if (b.callbackUrl !== undefined) {
      // The literal check of the outbound guard (the connect-time check is the real one: a name may resolve anywhere later).
      const refused = literalTargetRefusal(b.callbackUrl, deps.guard);
      if (refused) {
        const message = `callbackUrl may not point at ${refused}: callbacks are sent from inside this deployment (WEBHOOK_ALLOW_PRIVATE_TARGETS=true allows it)`;
        throw new AppError('invalid_callback_url', message, { issues: [{ path: 'body.callbackUrl', message }] });
      }
    }
    // No read before the gate: a repeat is found by the insert (its unique key). Only when
    // the gate refuses or finds no approval needed is the first decision looked for, so a
    // repeat still answers with it even if the policy changed (or went away) since.
    let gate: GateResult;
    try {
      gate = await gateOf(deps, org, b);
    } catch (err) {
      const first = err instanceof AppError ? await existing(org, b) : undefined;
      if (first) return first;
      throw err;
    }
    if (gate === 'not_required') return (await existing(org, b)) ?? { status: 200, body: { approvalNeeded: false, reason: 'not_required' } };
    const by: Requester = { id: actorOf(req.principal), label: actorLabelOf(req.principal) };
    const createdBy = by.id;
    // With the gateway's attempt marker, the id's random part is the marker's: a decision
    // found with it is what this request's first send made (the gateway resent it after
    // waiting in vain), answered as created; any other is `existing`.
    const marked = req.attempt ? idRandomOf(`${org}\u0000${req.attempt}`) : undefined;
    const found = (row: ExistingRow) => existingReply(row, marked && row.id.endsWith(marked) ? gate.reason : undefined);

    try {
      if (!b.exclusive) {
        const done = await openAtOnce(org, b, gate, by, marked, found);
        if (done) return done;
      }
      return await store.transaction(async (tx) => {
        // Serializes creates on one run, so `exclusive` really leaves at most one PENDING.
        // The time and id are taken after the lock, so creation order on a run is the order
        // of `created_at` and of the ids: with `exclusive`, the survivor is the newest.
        await tx.decisions.lockRun(org, b.externalRunId);
        const now = clock.now();
        const o = opening(org, b, gate, by, now, marked);
        const d = await tx.decisions.insertWithEntry(o.row, { ...o.entry, at: now });
        if (!d) return found((await tx.decisions.findByRunStep(org, b.externalRunId, b.stepRef))!);
        const events: NewEvent[] = [];
        if (b.exclusive) {
          // Each with its entry and event, before the new one's (`created` comes last).
          await tx.decisions.supersede(org, b.externalRunId, o.id, createdBy, now, by.label);
        }
        events.push(...o.created);
        // Last, with the events in the same statement: the counter row (shard 0 of an org
        // with a limit) stays locked only for the commit; a refusal rolls everything back.
        await takeQuota(tx, org, now, events);
        return o.answer;
      });
    } catch (err) {
      // The advisory lock makes this rare, but a unique violation still means "someone else created it".
      if (isUniqueViolation(err)) {
        const again = await store.decisions.findByRunStep(org, b.externalRunId, b.stepRef);
        if (again) return found(again);
      }
      throw err;
    }
  }
}
