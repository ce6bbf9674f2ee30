import { EVENT, enqueueEvents, newId, type Knex, type NewEvent, type PolicyDefinition } from '@approvals/shared';

export interface PolicyRow {
  id: string;
  org_id: string;
  key: string;
  name: string;
  description: string | null;
  current_version: number;
  current_version_id: string;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
}

export interface VersionRow {
  id: string;
  policy_id: string;
  org_id: string;
  number: number;
  definition: PolicyDefinition;
  content_hash: string;
  changed_by: string | null;
  source: 'dashboard' | 'api' | 'repository';
  created_at: Date;
}

export interface SaveInput {
  org: string;
  key: string;
  /** Labels; `undefined` keeps the current one (update), a value replaces it. */
  name?: string;
  description?: string | null;
  definition: PolicyDefinition;
  hash: string;
  actor: string | null;
  /** Who `actor` is, as people read it (an email, or `API key <name>`): for the audit log. */
  actorLabel: string | null;
  source: 'dashboard' | 'api' | 'repository';
  /**
   * Optimistic check for read-modify-write callers (update merges the body into the
   * definition it read): when the policy has moved past this version meanwhile, nothing
   * is written and `save` answers 'stale' so the caller merges again.
   */
  expectedVersion?: number;
}

export interface SaveResult {
  policy: PolicyRow;
  version: VersionRow;
  created: boolean;
  restored: boolean;
  versionAdded: boolean;
  labelsChanged: boolean;
}

type JoinedRow = PolicyRow & {
  v_id: string;
  v_number: number;
  v_definition: PolicyDefinition;
  v_hash: string;
  v_changed_by: string | null;
  v_source: VersionRow['source'];
  v_created_at: Date;
};

function splitRow(r: JoinedRow): { policy: PolicyRow; version: VersionRow } {
  return {
    policy: r,
    version: {
      id: r.v_id,
      policy_id: r.id,
      org_id: r.org_id,
      number: r.v_number,
      definition: r.v_definition,
      content_hash: r.v_hash,
      changed_by: r.v_changed_by,
      source: r.v_source,
      created_at: r.v_created_at,
    },
  };
}

/**
 * `evt.policy.changed`: what a save did to a policy, for the audit log (who, from where, the
 * version and content hash before and after, the labels when they changed).
 */
function changedEvent(
  input: SaveInput,
  policy: PolicyRow,
  change: 'created' | 'updated' | 'restored',
  before: VersionRow | null,
  after: VersionRow,
  labels?: { name: [string, string]; description: [string | null, string | null] },
): NewEvent {
  return {
    subject: EVENT.policyChanged,
    org: input.org,
    data: {
      key: policy.key,
      policyId: policy.id,
      change,
      actor: input.actor,
      actorLabel: input.actorLabel,
      source: input.source,
      before: before ? { version: before.number, versionId: before.id, contentHash: before.content_hash } : null,
      after: { version: after.number, versionId: after.id, contentHash: after.content_hash },
      ...(labels
        ? { labels: { name: { before: labels.name[0], after: labels.name[1] }, description: { before: labels.description[0], after: labels.description[1] } } }
        : {}),
    },
  };
}

export function createPoliciesStore(db: Knex) {
  const withCurrentVersion = () =>
    db('policies as p')
      .join('policy_versions as v', 'v.id', 'p.current_version_id')
      .select(
        'p.*',
        'v.id as v_id',
        'v.number as v_number',
        'v.definition as v_definition',
        'v.content_hash as v_hash',
        'v.changed_by as v_changed_by',
        'v.source as v_source',
        'v.created_at as v_created_at',
      );

  async function currentVersion(trx: Knex, policy: PolicyRow): Promise<VersionRow> {
    return trx('policy_versions').where({ id: policy.current_version_id }).first();
  }

  async function insertVersion(trx: Knex, policyId: string, number: number, input: SaveInput): Promise<VersionRow> {
    const [v] = await trx('policy_versions')
      .insert({
        id: newId('policyVersion'),
        policy_id: policyId,
        org_id: input.org,
        number,
        definition: JSON.stringify(input.definition),
        content_hash: input.hash,
        changed_by: input.actor,
        source: input.source,
      })
      .returning('*');
    return v;
  }

  return {
    /**
     * Creates, restores or changes a policy. Concurrent saves of one key serialize on the
     * policy row (`FOR UPDATE`), so version numbers are gapless and unique; a first save
     * racing another first save loses the insert and takes the update path.
     */
    async save(input: SaveInput, mode: 'upsert' | 'update'): Promise<SaveResult | 'stale' | undefined> {
      return db.transaction(async (trx) => {
        if (mode === 'upsert') {
          const policyId = newId('policy');
          const versionId = newId('policyVersion');
          const inserted: PolicyRow[] = await trx('policies')
            .insert({
              id: policyId,
              org_id: input.org,
              key: input.key,
              name: input.name ?? input.key,
              description: input.description ?? null,
              current_version: 1,
              current_version_id: versionId,
            })
            .onConflict(['org_id', 'key'])
            .ignore()
            .returning('*');
          if (inserted[0]) {
            const [version] = await trx('policy_versions')
              .insert({
                id: versionId,
                policy_id: policyId,
                org_id: input.org,
                number: 1,
                definition: JSON.stringify(input.definition),
                content_hash: input.hash,
                changed_by: input.actor,
                source: input.source,
              })
              .returning('*');
            await enqueueEvents(trx, [changedEvent(input, inserted[0], 'created', null, version)]);
            return { policy: inserted[0], version, created: true, restored: false, versionAdded: true, labelsChanged: true };
          }
        }
        const existing: PolicyRow | undefined = await trx('policies').where({ org_id: input.org, key: input.key }).forUpdate().first();
        if (!existing) return undefined;
        if (mode === 'update' && existing.archived_at) return undefined;
        if (input.expectedVersion !== undefined && existing.current_version !== input.expectedVersion) return 'stale';
        const restored = existing.archived_at !== null;
        const before = await currentVersion(trx, existing);
        let version = before;
        let versionAdded = false;
        if (version.content_hash !== input.hash) {
          version = await insertVersion(trx, existing.id, existing.current_version + 1, input);
          versionAdded = true;
        }
        const name = input.name ?? existing.name;
        const description = input.description === undefined ? existing.description : input.description;
        const labelsChanged = name !== existing.name || description !== existing.description;
        let policy = existing;
        if (versionAdded || labelsChanged || restored) {
          [policy] = await trx('policies')
            .where({ id: existing.id })
            .update({
              name,
              description,
              current_version: version.number,
              current_version_id: version.id,
              archived_at: null,
              updated_at: trx.fn.now(),
            })
            .returning('*');
          await enqueueEvents(trx, [
            changedEvent(
              input,
              policy,
              restored ? 'restored' : 'updated',
              before,
              version,
              labelsChanged ? { name: [existing.name, name], description: [existing.description, description] } : undefined,
            ),
          ]);
        }
        return { policy, version, created: false, restored, versionAdded, labelsChanged };
      });
    },

    async find(org: string, key: string, opts: { includeArchived?: boolean } = {}): Promise<PolicyRow | undefined> {
      const q = db('policies').where({ org_id: org, key });
      if (!opts.includeArchived) q.whereNull('archived_at');
      return q.first();
    },

    /** The policy and its current version, in one statement (it is on every decision's path). */
    async current(org: string, key: string): Promise<{ policy: PolicyRow; version: VersionRow } | undefined> {
      const rows = await withCurrentVersion().where('p.org_id', org).andWhere('p.key', key).whereNull('p.archived_at').limit(1);
      return rows.map(splitRow)[0];
    },

    async list(org: string): Promise<Array<{ policy: PolicyRow; version: VersionRow }>> {
      const rows = await withCurrentVersion().where('p.org_id', org).whereNull('p.archived_at').orderBy('p.key');
      return rows.map(splitRow);
    },

    async versions(policyId: string): Promise<VersionRow[]> {
      return db('policy_versions').where({ policy_id: policyId }).orderBy('number');
    },

    async version(policyId: string, number: number): Promise<VersionRow | undefined> {
      return db('policy_versions').where({ policy_id: policyId, number }).first();
    },

    /**
     * Archives a policy (undefined if it already was), with the events that announce it
     * (a forced archive is audited), in one transaction through the outbox.
     */
    async archive(policyId: string, events: NewEvent[] = []): Promise<PolicyRow | undefined> {
      return db.transaction(async (trx) => {
        const [row]: PolicyRow[] = await trx('policies')
          .where({ id: policyId })
          .whereNull('archived_at')
          .update({ archived_at: trx.fn.now(), updated_at: trx.fn.now() })
          .returning('*');
        if (row && events.length) await enqueueEvents(trx, events);
        return row;
      });
    },
  };
}
export type PoliciesStore = ReturnType<typeof createPoliciesStore>;
