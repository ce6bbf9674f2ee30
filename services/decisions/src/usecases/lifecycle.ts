import { AccessEndpoints, EVENT, type Bus, type Clock, type Logger } from '@approvals/shared';
import { pendingVoters, remindRecipients } from '../domain/decision';
import { policyRef, type DecisionRow } from '../store/decision.row';
import type { DecisionsStore } from '../store/decisions.store';

const DAY_MS = 24 * 3600 * 1000;

/**
 * Timer-driven steps of a PENDING decision (reminder, escalation) and the retention
 * purge. Each is idempotent: a redelivered timer event finds the work done and does nothing.
 * When they fire is the scheduler's; whom and through which channel, the notifier's.
 */
export function createLifecycle(deps: { store: DecisionsStore; bus: Bus; clock: Clock; log: Logger }) {
  const { store, clock } = deps;
  const title = (d: DecisionRow) => ((d.context as { title?: string } | null)?.title ?? null) as string | null;

  return {
    /** Once, at ~75% of the timeout: the assignee (or, without one, everyone yet to vote). */
    async remind(org: string, id: string): Promise<boolean> {
      const now = clock.now();
      return store.transaction(async (tx) => {
        const d = await tx.decisions.lock(org, id);
        if (!d || d.status !== 'PENDING' || d.reminded_at) return false;
        const to = remindRecipients(d.assignee_email, pendingVoters(d.approvers, await tx.votes.voters(id)));
        await tx.decisions.markReminded(d, now, { type: 'reminded', actor: null, at: now, data: { to } }, [
          {
            subject: EVENT.decisionReminded,
            org,
            data: { decisionId: id, to, title: title(d), expiresAt: d.expires_at?.toISOString() ?? null, policy: policyRef(d), route: d.route },
          },
        ]);
        return true;
      });
    },

    /** A burst of reminder timers in one transaction: the same outcome as `remind` for each. */
    async remindMany(items: Array<{ org: string; id: string }>): Promise<number> {
      const now = clock.now();
      return store.transaction(async (tx) => {
        const marked = await tx.decisions.markRemindedMany(items, now, (d, voted) => {
          const to = remindRecipients(d.assignee_email, pendingVoters(d.approvers, voted));
          return {
            entry: { type: 'reminded', actor: null, at: now, data: { to } },
            events: [
              {
                subject: EVENT.decisionReminded,
                org: d.org_id,
                data: { decisionId: d.id, to, title: title(d), expiresAt: d.expires_at?.toISOString() ?? null, policy: policyRef(d), route: d.route },
              },
            ],
          };
        });
        return marked.length;
      });
    },

    /** Escalation step n of an `escalate` route, for those yet to vote. */
    async escalate(org: string, id: string, step: number): Promise<boolean> {
      const now = clock.now();
      return store.transaction(async (tx) => {
        const d = await tx.decisions.lock(org, id);
        if (!d || d.status !== 'PENDING') return false;
        if (await tx.timeline.hasEscalated(id, step)) return false;
        const to = pendingVoters(d.approvers, await tx.votes.voters(id));
        await tx.decisions.change({
          id,
          guard: { status: 'PENDING' },
          set: {},
          entries: [{ type: 'escalated', actor: null, at: now, data: { step, to } }],
          events: [{ subject: EVENT.decisionEscalated, org, data: { decisionId: id, step, to, title: title(d), policy: policyRef(d), route: d.route } }],
        });
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
        const cutoff = new Date(clock.now().getTime() - decisionDataDays * DAY_MS);
        purged += await store.transaction((tx) => tx.decisions.purgeContent(org, cutoff, clock.now()));
      }
      if (purged) deps.log.info({ purged }, 'retention purge done');
      return purged;
    },
  };
}
export type Lifecycle = ReturnType<typeof createLifecycle>;
