import { AppError, EVENT, canonicalize, enqueueEvents, isUniqueViolation, newId, sha256Hex, type DecisionStatus, type Knex } from '@approvals/shared';
import { quotaPeriod } from '../domain/decision';
import { toView, type DecisionRow } from '../store/decision.row';
import { evidenceView } from './decision-actions';
import type { Tally } from '../domain/decision';

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

export function createDecisionReads(deps: { db: Knex; tallyOf: (db: Knex, d: DecisionRow) => Promise<Tally>; defaultMonthlyQuota?: number }) {
  const { db } = deps;
  const find = async (org: string, id: string): Promise<DecisionRow> => {
    const d: DecisionRow | undefined = await db('decisions').where({ org_id: org, id }).first();
    if (!d) throw new AppError('not_found', 'decision not found');
    return d;
  };
  const byAssignee = (q: Knex.QueryBuilder, assignee?: string) => {
    if (assignee) {
      const email = assignee.toLowerCase();
      q.andWhere((w) => w.where('assignee_email', email).orWhereRaw('? = ANY(approvers)', [email]));
    }
  };

  return {
    async workerGet(org: string, id: string) {
      return toView(await find(org, id));
    },

    async workerList(org: string, q: { status?: DecisionStatus; limit: number }) {
      const query = db('decisions').where({ org_id: org }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(q.limit);
      if (q.status) query.andWhere({ status: q.status });
      return { decisions: withinPageBudget(((await query) as DecisionRow[]).map(toView)) };
    },

    async list(org: string, q: { status?: DecisionStatus; assignee?: string; workflowRef?: string; limit: number; offset: number }) {
      const base = db('decisions').where({ org_id: org });
      if (q.status) base.andWhere({ status: q.status });
      if (q.workflowRef) base.andWhere({ workflow_ref: q.workflowRef });
      byAssignee(base, q.assignee);
      const [rows, [{ n }]] = await Promise.all([
        base.clone().orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(q.limit).offset(q.offset),
        base.clone().count({ n: '*' }),
      ]);
      return { decisions: withinPageBudget((rows as DecisionRow[]).map(toView)), limit: q.limit, offset: q.offset, total: Number(n) };
    },

    async workflows(org: string, q: { assignee?: string }) {
      const query = db('decisions')
        .where({ org_id: org })
        .whereNotNull('workflow_ref')
        .groupBy('workflow_ref')
        .orderBy('workflow_ref')
        .select('workflow_ref', db.raw("count(*) FILTER (WHERE status = 'PENDING') AS pending"), db.raw('count(*) AS total'), db.raw('max(created_at) AS last_created_at'));
      byAssignee(query, q.assignee);
      const rows: Array<{ workflow_ref: string; pending: string; total: string; last_created_at: Date }> = await query;
      return { workflows: rows.map((r) => ({ workflowRef: r.workflow_ref, pending: Number(r.pending), total: Number(r.total), lastCreatedAt: r.last_created_at.toISOString() })) };
    },

    async get(org: string, id: string) {
      const d = await find(org, id);
      const [tally, timeline, evidence] = await Promise.all([
        deps.tallyOf(db, d),
        db('timeline').where({ decision_id: id }).orderBy('seq'),
        db('evidence').where({ decision_id: id }).orderBy([{ column: 'added_at' }, { column: 'id' }]),
      ]);
      return {
        ...toView(d),
        tally,
        timeline: timeline.map((t: { at: Date; type: string; actor: string | null; data: Record<string, unknown> }) => ({ ...t.data, at: t.at.toISOString(), type: t.type, actor: t.actor })),
        evidence: evidence.map(evidenceView),
      };
    },

    async listEvidence(org: string, id: string) {
      await find(org, id);
      return { evidence: (await db('evidence').where({ decision_id: id }).orderBy([{ column: 'added_at' }, { column: 'id' }])).map(evidenceView) };
    },

    async usage(org: string, now: Date) {
      const period = quotaPeriod(now);
      const [row, override] = await Promise.all([
        db('usage_counters').where({ org_id: org, period }).first('decisions'),
        db('org_quotas').where({ org_id: org }).first('monthly_decision_limit'),
      ]);
      const limit = override ? override.monthly_decision_limit : (deps.defaultMonthlyQuota ?? null);
      return { period, decisions: row?.decisions ?? 0, limit };
    },

    async usageHistory(org: string) {
      const rows = await db('usage_counters').where({ org_id: org }).orderBy('period', 'desc').limit(24);
      return { usage: rows.map((r: { period: string; decisions: number }) => ({ period: r.period, decisions: r.decisions })) };
    },
  };
}

/** Workflow definitions: idempotent upsert by id; each distinct (version, definition) is kept. */
export function createWorkflows(deps: { db: Knex }) {
  const { db } = deps;
  const view = (r: { id: string; name: string | null; version: number; engine: string; steps: unknown[]; created_at: Date; updated_at: Date }) => ({
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
      return db.transaction(async (trx) => {
        // A registration never moves a workflow back: an older version is a stale deploy.
        const current = await trx('workflows').where({ org_id: org, id: def.id }).forUpdate().first('version');
        if (current && current.version > def.version) {
          throw new AppError('conflict', `workflow ${def.id} is at version ${current.version}; version ${def.version} is older and was not registered`, {
            currentVersion: current.version,
          });
        }
        const inserted = await trx('workflows')
          .insert({ org_id: org, id: def.id, name: def.name ?? null, version: def.version, engine: def.engine, steps: JSON.stringify(def.steps), definition_hash: hash })
          .onConflict(['org_id', 'id'])
          .ignore()
          .returning('id');
        if (inserted.length === 0) {
          await trx('workflows')
            .where({ org_id: org, id: def.id })
            .whereNot({ definition_hash: hash })
            .update({ name: def.name ?? null, version: def.version, engine: def.engine, steps: JSON.stringify(def.steps), definition_hash: hash, updated_at: trx.fn.now() });
        }
        await trx('workflow_versions')
          .insert({ org_id: org, workflow_id: def.id, version: def.version, definition: JSON.stringify(def), definition_hash: hash })
          .onConflict(['org_id', 'workflow_id', 'version', 'definition_hash'])
          .ignore();
        return { status: 200, body: { id: def.id, version: def.version, created: inserted.length > 0 } };
      });
    },
    async list(org: string) {
      return { workflows: (await db('workflows').where({ org_id: org }).orderBy('id')).map(view) };
    },
    /**
     * Fires the engine event for a registered workflow (through the notifier, from the
     * outbox). The idempotency key makes a repeat return the first run and fire nothing.
     */
    async startRun(org: string, actor: string, b: { workflowId: string; input?: Record<string, unknown>; idempotencyKey?: string; timeoutSec?: number }) {
      const wf = await db('workflows').where({ org_id: org, id: b.workflowId }).first();
      if (!wf) throw new AppError('not_found', `workflow ${b.workflowId} is not registered`);
      const existing = async () =>
        b.idempotencyKey ? db('runs').where({ org_id: org, idempotency_key: b.idempotencyKey }).first('id', 'workflow_id', 'input', 'timeout_sec') : undefined;
      // A repeat is the same request: a key reused for another workflow, input or timeout
      // is a caller bug, refused rather than answered with a run it did not ask for.
      const repeatOf = (run: { id: string; workflow_id: string; input: unknown; timeout_sec: number | null }) => {
        const same = run.workflow_id === b.workflowId && canonicalize(run.input ?? {}) === canonicalize(b.input ?? {}) && (run.timeout_sec ?? null) === (b.timeoutSec ?? null);
        if (!same) {
          throw new AppError('idempotency_key_reused', `idempotencyKey "${b.idempotencyKey}" was already used for a different run request (run ${run.id} of workflow ${run.workflow_id})`, {
            runId: run.id,
            workflowId: run.workflow_id,
          });
        }
        return { runId: run.id, workflowId: run.workflow_id, duplicate: true };
      };
      const before = await existing();
      if (before) return repeatOf(before);
      const runId = newId('run');
      try {
        await db.transaction(async (trx) => {
          await trx('runs').insert({
            id: runId,
            org_id: org,
            workflow_id: b.workflowId,
            engine: wf.engine,
            idempotency_key: b.idempotencyKey ?? null,
            input: JSON.stringify(b.input ?? {}),
            timeout_sec: b.timeoutSec ?? null,
            requested_by: actor,
          });
          await enqueueEvents(trx, [
            { subject: EVENT.runRequested, org, data: { runId, workflowId: b.workflowId, engine: wf.engine, input: b.input ?? {}, timeoutSec: b.timeoutSec ?? null } },
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
      const r = await db('workflows').where({ org_id: org, id }).first();
      if (!r) throw new AppError('not_found', `workflow ${id} not found`);
      return view(r);
    },
  };
}
