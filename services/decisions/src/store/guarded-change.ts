import { isUniqueViolation, outboxInsert, sendPrepared, toEnvelopes, type NewEvent } from '@approvals/shared';
import { pgArrayItem, type StoreScope } from './scope';

/** A timeline entry as a change writes it. */
export interface TimelineEntry {
  type: string;
  actor: string | null;
  at: Date;
  data: Record<string, unknown>;
}

/** A guard's condition on a column: equal to a value (null: IS NULL), or at most a time. */
export type GuardValue = unknown | { atMost: Date };

/**
 * A guarded change of one decision with what it entails. The row (`id`) is updated with
 * `set` where every condition of `guard` (and `where`) holds; only when it was, its
 * timeline entries (`entries`), its events (`events`, through the outbox) and the
 * statement `with` are written. An empty `set` changes nothing and only records (a refused
 * vote): the guard still decides whether anything is written.
 */
export interface GuardedChange {
  id: string;
  guard: Record<string, GuardValue>;
  set: Record<string, unknown>;
  entries: TimelineEntry[];
  events: NewEvent[];
  /** A condition more, in SQL over the row (`decisions`), with its named values. */
  where?: { sql: string; values: Record<string, unknown> };
  /** A write more, as one CTE over the changed row (`g`, its `id`), with its named values. */
  with?: { sql: string; values: Record<string, unknown> };
  /** A unique index whose violation by `with` means "not written" (a concurrent duplicate) rather than an error. */
  duplicateIndex?: string;
}

/** A column named by code (a guard's, a change's), checked before it is written into a statement. */
const column = (name: string) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a column name: ${name}`);
  return `"${name}"`;
};

const isAtMost = (v: unknown): v is { atMost: Date } => typeof v === 'object' && v !== null && !(v instanceof Date) && 'atMost' in v;

/** The same change of many decisions (a burst of timers): each row's entries and events, written for the rows changed. */
export interface GuardedChanges {
  guard: Record<string, GuardValue>;
  set: Record<string, unknown>;
  rows: Array<{ id: string; entries: TimelineEntry[]; events: NewEvent[] }>;
}

/**
 * The one way a decision changes: guarded change + timeline entries + outbox events, in
 * one statement (one round trip), so nothing is written when the guard failed and the
 * events are committed with the change they describe. Every state change of a decision
 * goes through here; zero rows changed means someone else changed it first (the caller
 * reads the current state). Answers whether the row was changed.
 */
export async function guardedChange(s: StoreScope, c: GuardedChange): Promise<boolean> {
  const changed = await write(s, {
    guard: c.guard,
    set: c.set,
    where: c.where,
    with: c.with,
    duplicateIndex: c.duplicateIndex,
    rows: [{ id: c.id, entries: c.entries, events: c.events }],
  });
  return changed.length > 0;
}

/**
 * `guardedChange` of many decisions at once, in the same one statement: each row is
 * changed where the guard holds on it, and only the changed rows' entries and events are
 * written. The caller has locked the rows (in the order of their ids: two bursts sharing
 * a decision wait for each other rather than deadlock). Answers the ids changed.
 */
export async function guardedChanges(s: StoreScope, c: GuardedChanges): Promise<string[]> {
  if (c.rows.length === 0) return [];
  return write(s, c);
}

async function write(s: StoreScope, c: Omit<GuardedChange, 'id' | 'entries' | 'events'> & { rows: GuardedChanges['rows'] }): Promise<string[]> {
  // One text per call site (its guard, which of it is null, and what it sets): prepared.
  const values: Record<string, unknown> = { ids: `{${c.rows.map((r) => pgArrayItem(r.id)).join(',')}}` };
  // As knex's update did: a column set to undefined is left as it is.
  const assignments = Object.entries(c.set)
    .filter(([, v]) => v !== undefined)
    .map(([col, v]) => {
      values[`set_${col}`] = v;
      return `${column(col)} = :set_${col}`;
    });
  const conditions = Object.entries(c.guard).map(([col, v]) => {
    if (v === null) return `${column(col)} IS NULL`;
    if (isAtMost(v)) {
      values[`guard_${col}`] = v.atMost;
      return `${column(col)} <= :guard_${col}`;
    }
    values[`guard_${col}`] = v;
    return `${column(col)} = :guard_${col}`;
  });
  if (c.where) {
    conditions.push(c.where.sql);
    Object.assign(values, c.where.values);
  }
  if (c.with) Object.assign(values, c.with.values);
  const where = [...conditions, 'id = ANY(:ids::text[])'].join(' AND ');
  const source = assignments.length ? `UPDATE decisions SET ${assignments.join(', ')} WHERE ${where} RETURNING id` : `SELECT id FROM decisions WHERE ${where}`;
  // Each entry and event keyed by its decision (`k`): written only for the rows changed.
  const perRow = c.rows.map((r) => ({ id: r.id, envelopes: toEnvelopes(r.events) }));
  const entries = c.rows.flatMap((r) => r.entries.map((e) => ({ k: r.id, ...e })));
  const events = perRow.flatMap((r) => r.envelopes.map((e) => ({ k: r.id, e })));
  const statement = () =>
    sendPrepared<{ id: string }>(
      s.q,
      `WITH g AS (${source}),${c.with ? ` w AS (${c.with.sql}),` : ''}
       t AS (INSERT INTO timeline (decision_id, type, actor, at, data)
             SELECT e->>'k', e->>'type', e->>'actor', (e->>'at')::timestamptz, e->'data'
               FROM jsonb_array_elements(:entries::jsonb) WITH ORDINALITY AS x(e, n)
              WHERE e->>'k' IN (SELECT id FROM g) ORDER BY n),
       o AS (${outboxInsert({ from: 'jsonb_array_elements(:events::jsonb) WITH ORDINALITY AS x(p, n)', element: "(p->'e')", lease: ':heldFor', where: "p->>'k' IN (SELECT id FROM g)" })})
       SELECT id FROM g`,
      { ...values, entries: JSON.stringify(entries), events: JSON.stringify(events), heldFor: s.heldFor },
    );
  let changed: string[];
  try {
    changed = (await statement()).rows.map((r) => r.id);
  } catch (err) {
    if (c.duplicateIndex && isUniqueViolation(err, c.duplicateIndex)) return [];
    throw err;
  }
  const done = new Set(changed);
  s.committed(perRow.filter((r) => done.has(r.id)).flatMap((r) => r.envelopes));
  return changed;
}
