import {
  AppError,
  providerLabel,
  EVENT,
  type Clock,
  NotifierEndpoints,
  canonicalize,
  isUniqueViolation,
  newId,
  sha256Hex,
  csvLine,
  type Bus,
  type DecisionsExportQuery,
  type SessionListQuery,
  type DecisionStatus,
  type ResponseSpec,
} from '@approvals/shared';
import { answerOf, answerableByLink, linkAnswers, quotaPeriod } from '../domain/decision';
import { EXPORT_COLUMNS, decodeCursor, encodeCursor, endOfDay, instantOf } from '../domain/decisions-log';
import type { ListFilter } from '../store/decision.store';
import { toView, type DecisionRow } from '../store/decision.row';
import type { DecisionsStore } from '../store/decisions.store';
import type { RunRow, WorkflowRow, WorkflowsStore } from '../store/workflows.store';
import { evidenceView, type DecisionActions } from './decision-actions';

/** Most a page of decisions may weigh (JSON): decisions carry contexts up to the 1 MiB body limit. */
export const PAGE_BUDGET_BYTES = 8 * 1024 * 1024;

/**
 * A page stops early (never before its first decision) once it would pass
 * PAGE_BUDGET_BYTES: a page of 200 decisions of 1 MiB each would be 200 MiB in memory
 * in three processes. Fewer decisions than `limit` with more left (`offset + length <
 * total`) means: ask for the next page from there.
 */
function withinPageBudget<T>(views: T[]): T[] {
  let bytes = 0;
  for (let i = 0; i < views.length; i++) {
    bytes += Buffer.byteLength(JSON.stringify(views[i]));
    if (bytes > PAGE_BUDGET_BYTES && i > 0) return views.slice(0, i);
  }
  return views;
}

/** The store's filter of the list's (and the export's) query; `scope`: a reviewer's email. */
function filterOf(q: DecisionsExportQuery, scope: string | undefined, now: Date): ListFilter {
  return {
    status: q.status,
    assignee: q.assignee,
    workflowRef: q.workflowRef,
    approver: scope,
    namedApprover: q.approver,
    policy: q.policy,
    requester: q.requester,
    createdFrom: instantOf(q.createdFrom),
    createdTo: instantOf(q.createdTo),
    dueFrom: instantOf(q.dueFrom),
    dueTo: instantOf(q.dueTo),
    title: q.q,
    stuck: q.view === 'stuck' ? { now } : undefined,
    expiring: q.view === 'expiring_today' ? { now, end: endOfDay(now, q.tz) } : undefined,
  };
}

export function createDecisionReads(deps: { store: DecisionsStore; actions: Pick<DecisionActions, 'current'>; clock: Clock; defaultMonthlyQuota?: number }) {
  const { store } = deps;
  /** Can `email` answer `d` now (domain `answerOf`); null `email`: a key, which never can. */
  const answerFor = async (d: DecisionRow, email: string | null) => {
    const person = email === null ? null : email.toLowerCase();
    const votedBefore = person !== null && d.approvers.includes(person) ? (await store.votes.voteOf(d.id, person)) !== undefined : false;
    return answerOf(
      { status: d.status, expiresAt: d.expires_at, approvers: d.approvers, requiresSignature: d.requires_signature },
      person === null ? null : { email: person, votedBefore },
      deps.clock.now(),
    );
  };
  const find = async (org: string, id: string): Promise<DecisionRow> => {
    const d = await store.decisions.find(org, id);
    if (!d) throw new AppError('not_found', 'decision not found');
    return d;
  };

  return {
    async workerGet(org: string, id: string) {
      return toView(await find(org, id));
    },

    /** For other services (notifier, surfaces): past the deadline reads EXPIRED, never PENDING. */
    async peek(org: string, id: string, person?: string) {
      const row = await deps.actions.current(org, id);
      const view = toView(row);
      const facts = { requiresSignature: view.requiresSignature, responseSpec: view.responseSpec as ResponseSpec | null, proposedOutput: view.proposedOutput };
      const you = person === undefined ? null : await answerFor(row, person);
      return { ...view, answerableByLink: answerableByLink(facts), linkAnswers: linkAnswers(facts), you };
    },

    async workerList(org: string, q: { status?: DecisionStatus; limit: number }) {
      return { decisions: withinPageBudget((await store.decisions.list(org, { status: q.status }, { limit: q.limit })).map(toView)) };
    },

    /** `scope`: a reviewer's email, who sees only the decisions naming them (contracts/roles.ts). */
    /** `person`: the signed-in person's email (null: a key), told which decisions wait on them. */
    async list(org: string, q: SessionListQuery, scope?: string, person: string | null = null) {
      const filter = filterOf(q, scope, deps.clock.now());
      const sort = { sort: q.sort, order: q.order };
      const [rows, total] = await Promise.all([
        store.decisions.list(org, filter, { limit: q.limit, offset: q.offset }, sort),
        store.decisions.count(org, filter),
      ]);
      const views = withinPageBudget(rows.map(toView));
      const page = rows.slice(0, views.length);
      const me = person === null ? null : person.toLowerCase();
      const voted =
        me === null
          ? new Set<string>()
          : await store.votes.votedOn(
              page.map((d) => d.id),
              me,
            );
      const now = deps.clock.now();
      const waiting = (d: DecisionRow) =>
        me !== null &&
        answerOf(
          { status: d.status, expiresAt: d.expires_at, approvers: d.approvers, requiresSignature: d.requires_signature },
          { email: me, votedBefore: voted.has(d.id) },
          now,
        ).canAnswer;
      return {
        // Who asked, as people read it (`API key <name>`, an email): kept on the row at creation.
        decisions: page.map((d, i) => ({ ...views[i]!, requestedBy: d.created_by_label ?? null, waitingOnYou: waiting(d) })),
        limit: q.limit,
        offset: q.offset,
        total,
      };
    },

    /**
     * One chunk of the CSV export of the list's filtered set (the gateway streams the
     * chunks one after another): the header first when it starts, then up to `size` rows
     * after the cursor, and the cursor of the next chunk (null: that was the last).
     */
    async exportChunk(org: string, q: DecisionsExportQuery & { after?: string; size: number }, scope?: string) {
      const after = q.after === undefined ? undefined : decodeCursor(q.after);
      const rows = await store.decisions.exportChunk(org, filterOf(q, scope, deps.clock.now()), { sort: q.sort, order: q.order }, q.size, after);
      let csv = after === undefined ? csvLine([...EXPORT_COLUMNS]) : '';
      for (const r of rows) {
        csv += csvLine([
          r.id,
          r.status,
          r.title,
          r.policy_key,
          r.policy_version,
          r.created_by_label ?? r.created_by,
          r.approvers,
          r.decided_by,
          r.note,
          r.workflow_ref,
          r.external_run_id,
          r.step_ref,
          r.created_at,
          r.expires_at,
          r.resolved_at,
          r.consumed_at,
          r.consumed_by,
        ]);
      }
      const last = rows.at(-1);
      return { csv, rows: rows.length, next: rows.length < q.size || !last ? null : encodeCursor(last.sort_key, last.id) };
    },

    async workflows(org: string, q: { assignee?: string }, scope?: string) {
      return { workflows: await store.decisions.workflowSummaries(org, q.assignee, scope) };
    },

    /**
     * A reviewer reaches only the decisions naming them: any other answers as a missing one
     * (404), so a reviewer cannot even learn that it exists. Everyone else sees the org's.
     */
    async requireVisible(org: string, id: string, scope: string | undefined): Promise<void> {
      if (scope === undefined) return;
      const d = await find(org, id);
      if (!d.approvers.includes(scope)) throw new AppError('not_found', 'decision not found');
    },

    /** `person`: the signed-in person's email (null: a key), told whether they can answer (`you`). */
    async get(org: string, id: string, person: string | null) {
      const d = await find(org, id);
      const [tally, timeline, evidence, you] = await Promise.all([store.votes.tally(d), store.timeline.of(id), store.evidence.of(id), answerFor(d, person)]);
      const label = (t: (typeof timeline)[number]) => (typeof t.data.actorLabel === 'string' ? t.data.actorLabel : t.actor);
      return {
        ...toView(d),
        // Who asked, as people read it: kept on the row at creation (`created_by_label`).
        requestedBy: d.created_by_label ?? null,
        you,
        tally,
        timeline: timeline.map((t) => ({ ...t.data, at: t.at.toISOString(), type: t.type, actor: t.actor, actorLabel: label(t) })),
        evidence: evidence.map(evidenceView),
      };
    },

    async listEvidence(org: string, id: string) {
      await find(org, id);
      return { evidence: (await store.evidence.of(id)).map(evidenceView) };
    },

    /** `GET /v1/usage/current`: the counter and limit the 402 quota_exceeded uses. */
    async usageCurrent(org: string, now: Date) {
      const period = quotaPeriod(now);
      const [used, row] = await Promise.all([store.quota.used(org, period), store.quota.row(org)]);
      const limit = row === undefined ? (deps.defaultMonthlyQuota ?? null) : row.limit;
      return { period, plan: row?.plan ?? 'default', decisions: { used, limit } };
    },

    async usageItems(org: string) {
      return { items: await store.quota.usageHistory(org, 24) };
    },

    /** For the policies service: what is pending under each policy, and its last use. */
    async policyUsage(org: string, policyIds: string[]) {
      const usage = await store.decisions.policyUsage(org, policyIds);
      return { usage: usage.map((u) => ({ policyId: u.policyId, pending: u.pending, lastUsedAt: u.lastUsedAt?.toISOString() ?? null })) };
    },

    async byEnvelope(org: string, envelopeId: string) {
      return { decisionIds: await store.decisions.byEnvelope(org, envelopeId) };
    },

    /** Billing sets the org's plan and quota; `plan: null` returns it to the deployment default. */
    async setPlan(org: string, plan: string | null, limit: number | null) {
      await store.quota.setPlan(org, plan, limit);
      return plan === null ? { org, plan: 'default', limit: deps.defaultMonthlyQuota ?? null } : { org, plan, limit };
    },
  };
}

/** Workflow definitions: idempotent upsert by id; each distinct (version, definition) is kept. */
export function createWorkflows(deps: { store: WorkflowsStore; bus: Bus }) {
  const { store } = deps;
  const view = (r: WorkflowRow) => ({
    id: r.id,
    name: r.name,
    version: r.version,
    engine: r.engine as 'engineA',
    steps: r.steps,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  });
  return {
    async register(org: string, def: { id: string; name?: string; version: number; engine: string; steps: unknown[] }) {
      const hash = sha256Hex(canonicalize(def));
      return store.transaction(async (tx) => {
        // A registration never moves a workflow back: an older version is a stale deploy.
        const current = await tx.lockedVersion(org, def.id);
        if (current !== undefined && current > def.version) {
          throw new AppError('conflict', `workflow ${def.id} is at version ${current}; version ${def.version} is older and was not registered`, {
            currentVersion: current,
          });
        }
        const created = await tx.save(org, def, hash);
        return { status: 200, body: { id: def.id, version: def.version, created } };
      });
    },
    async list(org: string) {
      return { workflows: (await store.list(org)).map(view) };
    },
    /**
     * Fires the engine event for a registered workflow (through the notifier, from the
     * outbox). The idempotency key makes a repeat return the first run and fire nothing.
     */
    async startRun(org: string, actor: string, b: { workflowId: string; input?: Record<string, unknown>; idempotencyKey?: string; timeoutSec?: number }) {
      const wf = await store.get(org, b.workflowId);
      if (!wf) throw new AppError('not_found', `workflow ${b.workflowId} is not registered`);
      const existing = async () => (b.idempotencyKey ? store.runByKey(org, b.idempotencyKey) : undefined);
      // A repeat is the same request: a key reused for another workflow, input or timeout
      // is a caller bug, refused rather than answered with a run it did not ask for.
      const repeatOf = (run: RunRow) => {
        const same =
          run.workflow_id === b.workflowId &&
          canonicalize(run.input ?? {}) === canonicalize(b.input ?? {}) &&
          (run.timeout_sec ?? null) === (b.timeoutSec ?? null);
        if (!same) {
          throw new AppError(
            'idempotency_key_reused',
            `idempotencyKey "${b.idempotencyKey}" was already used for a different run request (run ${run.id} of workflow ${run.workflow_id})`,
            {
              runId: run.id,
              workflowId: run.workflow_id,
            },
          );
        }
        return { runId: run.id, workflowId: run.workflow_id, duplicate: true };
      };
      const before = await existing();
      if (before) return repeatOf(before);
      // A run whose engine nobody configured would be a silent skip: refused instead.
      const engine = await deps.bus.call(NotifierEndpoints.engineConfigured, { org, engine: wf.engine });
      if (!engine.configured) {
        throw new AppError(
          'engine_not_configured',
          `workflow ${b.workflowId} runs on ${providerLabel(wf.engine)} (${wf.engine}), which is not configured for this org (PUT /v1/settings/engines) or the deployment`,
          { engine: wf.engine },
        );
      }
      const runId = newId('run');
      try {
        await store.transaction(async (tx) => {
          await tx.insertRun({
            id: runId,
            org,
            workflowId: b.workflowId,
            engine: wf.engine,
            idempotencyKey: b.idempotencyKey ?? null,
            input: b.input ?? {},
            timeoutSec: b.timeoutSec ?? null,
            requestedBy: actor,
          });
          await tx.events([
            {
              subject: EVENT.runRequested,
              org,
              data: { runId, workflowId: b.workflowId, engine: wf.engine, input: b.input ?? {}, timeoutSec: b.timeoutSec ?? null },
            },
          ]);
        });
      } catch (err) {
        // Two requests with one key at once: the loser answers with the winner's run.
        const winner = isUniqueViolation(err) ? await existing() : undefined;
        if (winner) return repeatOf(winner);
        throw err;
      }
      return { runId, workflowId: b.workflowId, duplicate: false };
    },
    async get(org: string, id: string) {
      const r = await store.get(org, id);
      if (!r) throw new AppError('not_found', `workflow ${id} not found`);
      return view(r);
    },
  };
}
