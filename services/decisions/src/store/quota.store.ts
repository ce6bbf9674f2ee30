import { outboxInsert, toEnvelopes, type NewEvent } from '@approvals/shared';
import { quotaPeriod } from '../domain/decision';
import type { StoreScope } from './scope';

/** Rows an unlimited org's monthly count is spread over (see `take`). */
export const USAGE_SHARDS = 16;

/** The monthly decision quota: the org's plan or override, and the counts per period. */
export class QuotaStore {
  constructor(private readonly s: StoreScope) {}

  /** The org's own quota row (billing's plan or an operator's override), if any. */
  async row(org: string): Promise<{ limit: number | null; plan: string | null } | undefined> {
    const row = await this.s.q('org_quotas').where({ org_id: org }).first('monthly_decision_limit', 'plan');
    return row ? { limit: row.monthly_decision_limit, plan: row.plan } : undefined;
  }

  /** Billing's plan and quota (limit null = unlimited); `plan` null removes the row (the deployment default). */
  async setPlan(org: string, plan: string | null, limit: number | null): Promise<void> {
    if (plan === null) {
      await this.s.q('org_quotas').where({ org_id: org }).delete();
      return;
    }
    await this.s
      .q('org_quotas')
      .insert({ org_id: org, plan, monthly_decision_limit: limit })
      .onConflict('org_id')
      .merge({ plan, monthly_decision_limit: limit, updated_at: this.s.q.fn.now() });
  }

  /**
   * Counts one decision in the period unless that would pass the org's limit (its own
   * row in org_quotas, else `defaultLimit`; null = unlimited): read, checked and counted in
   * one statement. With a limit, every create counts on shard 0 under its row lock against
   * the sum of all shards, so concurrent creates cannot both take the last unit. Without
   * one, a create counts on a random one of `USAGE_SHARDS` rows: no single hot row for
   * every create of the org to queue on. Answers the count used and the limit when refused.
   */
  async take(
    org: string,
    now: Date,
    defaultLimit: number | null | undefined,
    /** Written to the outbox in the same statement (the caller rolls back when refused). */
    events: NewEvent[] = [],
  ): Promise<{ taken: true } | { taken: false; used: number; limit: number }> {
    const period = quotaPeriod(now);
    const shard = Math.floor(Math.random() * USAGE_SHARDS);
    const envelopes = toEnvelopes(events);
    const outbox = envelopes.length
      ? `o AS (${outboxInsert({ from: 'jsonb_array_elements(:events::jsonb) WITH ORDINALITY AS x(e, n)', lease: ':heldFor' })}), `
      : '';
    const r = await this.s.q.raw(
      `WITH ${outbox}q AS (
         SELECT CASE WHEN EXISTS (SELECT 1 FROM org_quotas WHERE org_id = :org)
                     THEN (SELECT monthly_decision_limit FROM org_quotas WHERE org_id = :org)
                     ELSE :dflt::int END AS lim
       ), ins AS (
         INSERT INTO usage_counters (org_id, period, shard, decisions)
         SELECT :org, :period, CASE WHEN q.lim IS NULL THEN :shard::smallint ELSE 0 END, 1 FROM q
          WHERE q.lim IS NULL OR (SELECT coalesce(sum(u.decisions), 0) FROM usage_counters u WHERE u.org_id = :org AND u.period = :period) < q.lim
         ON CONFLICT (org_id, period, shard) DO UPDATE SET decisions = usage_counters.decisions + 1
          WHERE (SELECT lim FROM q) IS NULL
             OR usage_counters.decisions
                + (SELECT coalesce(sum(o.decisions), 0) FROM usage_counters o WHERE o.org_id = :org AND o.period = :period AND o.shard <> 0)
                < (SELECT lim FROM q)
         RETURNING decisions
       )
       SELECT (SELECT count(*) FROM ins)::int AS taken, (SELECT lim FROM q) AS lim`,
      { org, period, shard, dflt: defaultLimit ?? null, ...(envelopes.length ? { events: JSON.stringify(envelopes), heldFor: this.s.heldFor } : {}) },
    );
    const row = r.rows[0] as { taken: number; lim: number | null };
    if (row.taken > 0) {
      this.s.committed(envelopes);
      return { taken: true };
    }
    return { taken: false, used: await this.used(org, period), limit: row.lim ?? 0 };
  }

  async used(org: string, period: string): Promise<number> {
    const row = await this.s.q('usage_counters').where({ org_id: org, period }).sum({ n: 'decisions' }).first();
    return Number((row as { n?: unknown } | undefined)?.n ?? 0);
  }

  async usageHistory(org: string, months: number): Promise<Array<{ period: string; decisions: number }>> {
    const rows: Array<{ period: string; decisions: string | number }> = await this.s
      .q('usage_counters')
      .where({ org_id: org })
      .groupBy('period')
      .select('period', this.s.q.raw('sum(decisions) AS decisions'))
      .orderBy('period', 'desc')
      .limit(months);
    return rows.map((r) => ({ period: r.period, decisions: Number(r.decisions) }));
  }
}
