import { AppError } from '@approvals/shared';

/**
 * The operators' list of every decision: what its filters mean in time (pure, with the
 * injected clock's `now`), and the keyset cursor of its CSV export.
 */

/** A filter's instant: a date alone is its midnight UTC. */
export function instantOf(v: string | undefined): Date | undefined {
  if (v === undefined) return undefined;
  return new Date(/^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T00:00:00Z` : v);
}

/** The wall-clock parts of `at` in the time zone `tz`. */
function partsIn(at: Date, tz: string) {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(at);
  const n = (t: string) => Number(parts.find((p) => p.type === t)!.value);
  return { y: n('year'), m: n('month'), d: n('day'), h: n('hour'), min: n('minute'), s: n('second') };
}

/**
 * The end of `now`'s day in `tz` (the next local midnight), for the `expiring_today` view.
 * The zone's offset is read at the candidate instant and the candidate corrected once more,
 * so a day that changes its offset (daylight saving) still ends at its own midnight.
 */
export function endOfDay(now: Date, tz = 'UTC'): Date {
  const { y, m, d } = partsIn(now, tz);
  const wall = Date.UTC(y, m - 1, d + 1);
  let at = wall;
  for (let i = 0; i < 2; i++) {
    const p = partsIn(new Date(at), tz);
    const offset = Date.UTC(p.y, p.m - 1, p.d, p.h, p.min, p.s) - at;
    at = wall - offset;
  }
  return new Date(at);
}

/** A keyset cursor of the export: the last row's sort key (as PostgreSQL prints it) and id. */
export function encodeCursor(key: string, id: string): string {
  return Buffer.from(JSON.stringify([key, id])).toString('base64url');
}

export function decodeCursor(cursor: string): { key: string; id: string } {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(v) &&
      v.length === 2 &&
      typeof v[0] === 'string' &&
      typeof v[1] === 'string' &&
      (v[0] === 'infinity' || Number.isFinite(Date.parse(v[0])))
    ) {
      return { key: v[0], id: v[1] };
    }
  } catch {
    // falls through to the refusal
  }
  throw new AppError('invalid_request', 'the export cursor is not one this service made', { issues: [{ path: 'query.after', message: 'not a valid cursor' }] });
}

/** The CSV export's columns, in order. */
export const EXPORT_COLUMNS = [
  'id',
  'status',
  'title',
  'policy',
  'policyVersion',
  'requester',
  'approvers',
  'decidedBy',
  'note',
  'workflowRef',
  'externalRunId',
  'stepRef',
  'createdAt',
  'expiresAt',
  'resolvedAt',
  'consumedAt',
  'consumedBy',
] as const;
