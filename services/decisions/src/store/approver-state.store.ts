import type { StoreScope } from './scope';

/** Approvers disabled since: a projection of evt.approver.*, read by a vote (`VoteStore.readForVote`). */
export class ApproverStateStore {
  constructor(private readonly s: StoreScope) {}

  /** Applies an approver's state as of `at`; an older event never overwrites a newer one. */
  async apply(org: string, email: string, disabled: boolean, at: Date): Promise<void> {
    await this.s.q.raw(
      `INSERT INTO approver_states (org_id, email, disabled, changed_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (org_id, email) DO UPDATE SET disabled = EXCLUDED.disabled, changed_at = EXCLUDED.changed_at
       WHERE approver_states.changed_at <= EXCLUDED.changed_at`,
      [org, email.toLowerCase(), disabled, at],
    );
  }
}
