import { AccessEndpoints, EVENT, enqueueEvents, type Bus, type Clock, type Knex, type Logger } from '@approvals/shared';
import { policyRef, type DecisionRow } from '../store/decision.row';

/**
 * Timer-driven steps of a PENDING decision (reminder, escalation) and the retention
 * purge. Each is idempotent: a redelivered timer event finds the work done and does nothing.
 */
export function createLifecycle(deps: { db: Knex; bus: Bus; clock: Clock; log: Logger }) {
  const { db, clock } = deps;

  async function pendingVoters(trx: Knex, d: DecisionRow): Promise<string[]> {
    const voted = new Set((await trx('votes').where({ decision_id: d.id }).pluck('voter')) as string[]);
    return d.approvers.filter((a) => !voted.has(a));
  }

  const title = (d: DecisionRow) => ((d.context as { title?: string } | null)?.title ?? null) as string | null;

  return {
    /** Once, at ~75% of the timeout: the assignee (or, without one, everyone yet to vote). */
    async remind(org: string, id: string): Promise<boolean> {
      const now = clock.now();
      return db.transaction(async (trx) => {
        const d: DecisionRow | undefined = await trx('decisions').where({ org_id: org, id }).forUpdate().first();
        if (!d || d.status !== 'PENDING' || d.reminded_at) return false;
        const waiting = await pendingVoters(trx, d);
        const to = d.assignee_email ? [d.assignee_email] : waiting;
        await trx('decisions').where({ id }).update({ reminded_at: now });
        await trx('timeline').insert({ decision_id: id, type: 'reminded', actor: null, at: now, data: JSON.stringify({ to }) });
        await enqueueEvents(trx, [
          {
            subject: EVENT.decisionReminded,
            org,
            data: { decisionId: id, to, title: title(d), expiresAt: d.expires_at?.toISOString() ?? null, policy: policyRef(d), route: d.route },
          },
        ]);
        return true;
      });
    },

    /** Escalation step n of an `escalate` route: the next channel, for those yet to vote. */
    async escalate(org: string, id: string, step: number): Promise<boolean> {
      const now = clock.now();
      return db.transaction(async (trx) => {
        const d: DecisionRow | undefined = await trx('decisions').where({ org_id: org, id }).forUpdate().first();
        if (!d || d.status !== 'PENDING') return false;
        const done = await trx('timeline').where({ decision_id: id, type: 'escalated' }).whereRaw(`(data->>'step')::int = ?`, [step]).first();
        if (done) return false;
        const to = await pendingVoters(trx, d);
        await trx('timeline').insert({ decision_id: id, type: 'escalated', actor: null, at: now, data: JSON.stringify({ step, to }) });
        await enqueueEvents(trx, [
          { subject: EVENT.decisionEscalated, org, data: { decisionId: id, step, to, title: title(d), policy: policyRef(d), route: d.route } },
        ]);
        return true;
      });
    },

    /**
     * Drops the content of resolved decisions older than each org's retention setting
     * (context, drafts, evidence, refinement log) and keeps the record: status, verdict,
     * who decided, policy version, votes and timeline.
     */
    async purge(): Promise<number> {
      const { orgs } = await deps.bus.call(AccessEndpoints.retentionSettings, {});
      let purged = 0;
      for (const { org, decisionDataDays } of orgs) {
        if (!decisionDataDays) continue;
        const cutoff = new Date(clock.now().getTime() - decisionDataDays * 24 * 3600 * 1000);
        purged += await db.transaction(async (trx) => {
          const ids: string[] = await trx('decisions')
            .where({ org_id: org })
            .whereNot({ status: 'PENDING' })
            .whereNull('purged_at')
            .andWhere('resolved_at', '<', cutoff)
            .update({ context: null, proposed_output: null, refined_output: null, purged_at: clock.now() })
            .returning('id')
            .then((rows: Array<{ id: string }>) => rows.map((r) => r.id));
          if (ids.length) {
            await trx('evidence').whereIn('decision_id', ids).delete();
            await trx('refinements').whereIn('decision_id', ids).delete();
          }
          return ids.length;
        });
      }
      if (purged) deps.log.info({ purged }, 'retention purge done');
      return purged;
    },
  };
}
export type Lifecycle = ReturnType<typeof createLifecycle>;
