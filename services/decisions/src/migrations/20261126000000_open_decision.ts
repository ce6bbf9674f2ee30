import type { Knex } from '@approvals/shared';

export const name = '20261126000000_open_decision';

/** The decision's jsonb columns: taken from the argument as they are (no text round trip). */
const JSON_COLUMNS = ['route', 'context', 'proposed_output', 'response_spec', 'esign'];

/** The columns a create writes; the others keep their defaults. */
export const COLUMNS = [
  'id',
  'org_id',
  'external_run_id',
  'step_ref',
  'workflow_ref',
  'engine',
  'status',
  'reason',
  'policy_key',
  'policy_id',
  'policy_version',
  'policy_version_id',
  'approvers',
  'assignee_email',
  'approvals_required',
  'rejections_required',
  'requires_signature',
  'timeout_sec',
  'expires_at',
  'route',
  'context',
  'proposed_output',
  'response_spec',
  'esign',
  'facts_hash',
  'exclusive',
  'created_by',
  'created_at',
];

/**
 * A create of a decision (not `exclusive`) as one statement: the run's lock, the row, its
 * first timeline entry, the monthly count and the events, in one round trip and one
 * implicit transaction, with plans PostgreSQL keeps for the session instead of parsing
 * and planning five statements for every create (docs/performance.md). The rules stay in
 * the service: the row, the entry and the events come in as built and checked there; this
 * only writes them, in the order the service's own transaction did.
 *
 * Answers `{"outcome": "created"}`; `{"outcome": "existing", ...}` with the decision
 * already opened for this run and step; or `{"outcome": "later"}` when a create on the
 * same run committed, with a later time, while this one waited for the lock (the caller
 * then takes its time again under the lock, so creation order on a run stays the order
 * of `created_at`). A refused quota raises SQLSTATE AQ001 with the limit as detail, which
 * rolls everything back.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(openDecisionFunction(OUTBOX_INSERT));
}

/** How this version of the function writes its events (without a lease). */
export const OUTBOX_INSERT = `INSERT INTO decisions.outbox (id, subject, org, envelope)
      SELECT e->>'id', e->>'type', e->>'org', e FROM jsonb_array_elements(p_events) WITH ORDINALITY AS x(e, n) ORDER BY n;`;

/**
 * Whether a create on the same run committed later (then the caller opens it in a
 * transaction). As first written: the row comparison pins the run's unique index, which a
 * planner without statistics was feared to pass over for another index on org_id.
 */
export const LATER_BY_ROW = `-- The row comparison pins the run's unique index: on a table without statistics yet
      -- (a new install) the planner would otherwise read every decision of the org through
      -- another index on org_id.
      IF EXISTS (SELECT 1 FROM decisions.decisions d
                  WHERE (d.org_id, d.external_run_id, d.step_ref) >= (r.org_id, r.external_run_id, '')
                    AND d.org_id = r.org_id AND d.external_run_id = r.external_run_id AND d.created_at > r.created_at) THEN
        RETURN jsonb_build_object('outcome', 'later');
      END IF;`;

/**
 * The same check by the run's key alone (20261130000000_later_by_key). The row comparison
 * made the generic plan look costly (its default selectivity, a third of the index), so in
 * an org with much history PostgreSQL planned the statement afresh on every create. By the
 * key, the unique index is the plan with statistics and without, generic and custom alike.
 */
export const LATER_BY_KEY = `-- By the run's key: the unique index (org_id, external_run_id, step_ref), one plan.
      IF EXISTS (SELECT 1 FROM decisions.decisions d
                  WHERE d.org_id = r.org_id AND d.external_run_id = r.external_run_id AND d.created_at > r.created_at) THEN
        RETURN jsonb_build_object('outcome', 'later');
      END IF;`;

/**
 * The function's text, with `outboxInsert` as the statement that writes the events,
 * `laterCheck` as the check above and `columns` as the columns a create writes (later
 * migrations change only those). `defaults`: columns added later, with the value written
 * when a row from a release that does not send them yet comes in.
 */
export function openDecisionFunction(
  outboxInsert: string,
  laterCheck: string = LATER_BY_ROW,
  columns: string[] = COLUMNS,
  defaults: Record<string, string> = {},
): string {
  return `
    CREATE OR REPLACE FUNCTION decisions.open_decision(p_row jsonb, p_entry jsonb, p_events jsonb, p_period text, p_shard smallint, p_default_limit int)
    RETURNS jsonb LANGUAGE plpgsql AS $fn$
    DECLARE
      r decisions.decisions;
      v_id text;
      v_lim int;
      v_taken int;
      v_existing jsonb;
    BEGIN
      -- The scalar columns through the row type; the JSON ones below straight from p_row
      -- (populating a jsonb column would print and parse a large context again).
      r := jsonb_populate_record(NULL::decisions.decisions, p_row - '{${JSON_COLUMNS.join(',')}}'::text[]);
      PERFORM pg_advisory_xact_lock(hashtext(r.org_id), hashtext(r.external_run_id));
      ${laterCheck}

      INSERT INTO decisions.decisions (${columns.join(', ')})
      VALUES (${columns.map((c) => (JSON_COLUMNS.includes(c) ? `nullif(p_row->'${c}', 'null'::jsonb)` : c in defaults ? `coalesce(r.${c}, ${defaults[c]})` : `r.${c}`)).join(', ')})
      ON CONFLICT (org_id, external_run_id, step_ref) DO NOTHING
      RETURNING id INTO v_id;
      IF v_id IS NULL THEN
        SELECT jsonb_build_object('outcome', 'existing', 'id', d.id, 'status', d.status, 'expires_at', d.expires_at,
                                  'policy_version', d.policy_version, 'policy_version_id', d.policy_version_id)
          INTO v_existing
          FROM decisions.decisions d
         WHERE d.org_id = r.org_id AND d.external_run_id = r.external_run_id AND d.step_ref = r.step_ref;
        RETURN v_existing;
      END IF;

      INSERT INTO decisions.timeline (decision_id, type, actor, at, data)
      VALUES (r.id, p_entry->>'type', p_entry->>'actor', r.created_at, p_entry->'data');

      -- The monthly count, as DecisionsStore.takeQuota: an org without a limit on a shard
      -- of its choice; an org with one on shard 0, locked, against the sum of all shards.
      SELECT CASE WHEN EXISTS (SELECT 1 FROM decisions.org_quotas q WHERE q.org_id = r.org_id)
                  THEN (SELECT q.monthly_decision_limit FROM decisions.org_quotas q WHERE q.org_id = r.org_id)
                  ELSE p_default_limit END
        INTO v_lim;
      IF v_lim IS NULL THEN
        INSERT INTO decisions.usage_counters (org_id, period, shard, decisions) VALUES (r.org_id, p_period, p_shard, 1)
        ON CONFLICT (org_id, period, shard) DO UPDATE SET decisions = decisions.usage_counters.decisions + 1;
      ELSE
        INSERT INTO decisions.usage_counters AS u (org_id, period, shard, decisions)
        SELECT r.org_id, p_period, 0, 1
         WHERE (SELECT coalesce(sum(s.decisions), 0) FROM decisions.usage_counters s WHERE s.org_id = r.org_id AND s.period = p_period) < v_lim
        ON CONFLICT (org_id, period, shard) DO UPDATE SET decisions = u.decisions + 1
         WHERE u.decisions
               + (SELECT coalesce(sum(o.decisions), 0) FROM decisions.usage_counters o WHERE o.org_id = r.org_id AND o.period = p_period AND o.shard <> 0)
               < v_lim;
        GET DIAGNOSTICS v_taken = ROW_COUNT;
        IF v_taken = 0 THEN
          RAISE EXCEPTION 'quota_exceeded' USING ERRCODE = 'AQ001', DETAIL = v_lim::text;
        END IF;
      END IF;

      ${outboxInsert}
      RETURN jsonb_build_object('outcome', 'created');
    END
    $fn$`;
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS decisions.open_decision(jsonb, jsonb, jsonb, text, smallint, int)');
}
