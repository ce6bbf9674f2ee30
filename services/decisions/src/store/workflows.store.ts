import { enqueueEvents, type Knex, type NewEvent } from '@approvals/shared';

export interface WorkflowRow {
  id: string;
  name: string | null;
  version: number;
  engine: string;
  steps: unknown[];
  created_at: Date;
  updated_at: Date;
}

export interface RunRow {
  id: string;
  workflow_id: string;
  input: unknown;
  timeout_sec: number | null;
}

/** Workflow definitions and the runs started from them: the SQL of `usecases/workflows`. */
export class WorkflowsStore {
  constructor(private readonly q: Knex | Knex.Transaction) {}

  transaction<T>(fn: (tx: WorkflowsStore) => Promise<T>): Promise<T> {
    return (this.q as Knex).transaction((trx) => fn(new WorkflowsStore(trx)));
  }

  /** The current version, locked until the transaction ends. */
  async lockedVersion(org: string, id: string): Promise<number | undefined> {
    return (await this.q('workflows').where({ org_id: org, id }).forUpdate().first('version'))?.version;
  }

  /**
   * Inserts the workflow, or updates it when its content changed; keeps every distinct
   * (version, definition). Answers whether the workflow is new.
   */
  async save(org: string, def: { id: string; name?: string; version: number; engine: string; steps: unknown[] }, hash: string): Promise<boolean> {
    const fields = { name: def.name ?? null, version: def.version, engine: def.engine, steps: JSON.stringify(def.steps), definition_hash: hash };
    const inserted = await this.q('workflows')
      .insert({ org_id: org, id: def.id, ...fields })
      .onConflict(['org_id', 'id'])
      .ignore()
      .returning('id');
    if (inserted.length === 0) {
      await this.q('workflows')
        .where({ org_id: org, id: def.id })
        .whereNot({ definition_hash: hash })
        .update({ ...fields, updated_at: this.q.fn.now() });
    }
    await this.q('workflow_versions')
      .insert({ org_id: org, workflow_id: def.id, version: def.version, definition: JSON.stringify(def), definition_hash: hash })
      .onConflict(['org_id', 'workflow_id', 'version', 'definition_hash'])
      .ignore();
    return inserted.length > 0;
  }

  list(org: string): Promise<WorkflowRow[]> {
    return this.q('workflows').where({ org_id: org }).orderBy('id');
  }

  get(org: string, id: string): Promise<WorkflowRow | undefined> {
    return this.q('workflows').where({ org_id: org, id }).first();
  }

  runByKey(org: string, idempotencyKey: string): Promise<RunRow | undefined> {
    return this.q('runs').where({ org_id: org, idempotency_key: idempotencyKey }).first('id', 'workflow_id', 'input', 'timeout_sec');
  }

  async insertRun(r: {
    id: string;
    org: string;
    workflowId: string;
    engine: string;
    idempotencyKey: string | null;
    input: Record<string, unknown>;
    timeoutSec: number | null;
    requestedBy: string;
  }): Promise<void> {
    await this.q('runs').insert({
      id: r.id,
      org_id: r.org,
      workflow_id: r.workflowId,
      engine: r.engine,
      idempotency_key: r.idempotencyKey,
      input: JSON.stringify(r.input),
      timeout_sec: r.timeoutSec,
      requested_by: r.requestedBy,
    });
  }

  /** Domain events, committed with the change they describe (the outbox). */
  async events(events: NewEvent[]): Promise<void> {
    if (events.length) await enqueueEvents(this.q, events);
  }
}
