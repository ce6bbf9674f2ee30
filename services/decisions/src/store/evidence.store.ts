import type { StoreScope } from './scope';

export interface EvidenceRow {
  id: string;
  item: Record<string, unknown>;
  added_by: string | null;
  added_at: Date;
  content_hash: string;
}

/** Evidence items and the refinements asked of the org's model: what a decision gathers while PENDING. */
export class EvidenceStore {
  constructor(private readonly s: StoreScope) {}

  /** Appends an item; identical content (same hash) is not stored twice. */
  async add(e: {
    id: string;
    decisionId: string;
    item: Record<string, unknown>;
    hash: string;
    actor: string;
    at: Date;
  }): Promise<{ row: EvidenceRow; inserted: boolean }> {
    const inserted: EvidenceRow[] = await this.s
      .q('evidence')
      .insert({ id: e.id, decision_id: e.decisionId, item: JSON.stringify(e.item), content_hash: e.hash, added_by: e.actor, added_at: e.at })
      .onConflict(['decision_id', 'content_hash'])
      .ignore()
      .returning('*');
    if (inserted[0]) return { row: inserted[0], inserted: true };
    return { row: await this.s.q('evidence').where({ decision_id: e.decisionId, content_hash: e.hash }).first(), inserted: false };
  }

  of(decisionId: string): Promise<EvidenceRow[]> {
    return this.s
      .q('evidence')
      .where({ decision_id: decisionId })
      .orderBy([{ column: 'added_at' }, { column: 'id' }]);
  }

  async addRefinement(r: { decisionId: string; actor: string; feedback: string; draft: unknown; model: string; at: Date }): Promise<void> {
    await this.s
      .q('refinements')
      .insert({ decision_id: r.decisionId, actor: r.actor, feedback: r.feedback, draft: JSON.stringify(r.draft), model: r.model, at: r.at });
  }
}
