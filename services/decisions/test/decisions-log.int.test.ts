import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { startStack, type Stack } from '../../../test/helpers/stack';

/**
 * The operators' list of every decision (`GET /v1/decisions/` with its filters, sort,
 * paging and views) and its CSV export streamed in chunks (`GET /v1/decisions/export.csv`).
 * Real gateway, policies and decisions on PostgreSQL and NATS.
 */

const HOUR = 3600_000;
let seq = 0;
const run = () => `log-${Date.now().toString(36)}-${++seq}`;

/** A CSV body's lines (CRLF), without the empty one after the last break. */
const linesOf = (text: string) => text.split('\r\n').slice(0, -1);

describe('the decisions log', () => {
  let stack: Stack;
  let pg: Client;
  let org: string;
  let admin: string;
  let keyA: string;
  let keyB: string;
  let keyBId: string;
  const ids: Record<string, string> = {};

  const create = async (token: string, body: Record<string, unknown>) => {
    const res = await stack.http('POST', '/v1/worker/decisions', { token, body: { externalRunId: run(), stepRef: 's', engine: 'trigger', ...body } });
    expect(res.status).toBe(201);
    return res.body.decisionId as string;
  };
  /** Moves a decision in time: created `createdAgoH` hours ago, due in `dueInH` hours (null: no deadline). */
  const placeInTime = async (id: string, createdAgoH: number, dueInH: number | null) => {
    const now = Date.now();
    await pg.query('UPDATE decisions.decisions SET created_at = $2, expires_at = $3 WHERE id = $1', [
      id,
      new Date(now - createdAgoH * HOUR),
      dueInH === null ? null : new Date(now + dueInH * HOUR),
    ]);
  };
  const list = async (query: string, token = admin) => {
    const res = await stack.http('GET', `/v1/decisions/?${query}`, { token });
    expect({ query, status: res.status }).toEqual({ query, status: 200 });
    return res.body as { decisions: Array<{ id: string }>; total: number; limit: number; offset: number };
  };
  const idsOf = async (query: string, token = admin) => (await list(query, token)).decisions.map((d) => d.id);

  beforeAll(async () => {
    stack = await startStack({ label: 'declog', services: ['gateway', 'policies', 'decisions'] });
    ({ org, admin, apiKey: keyA } = await stack.newOrg());
    const b = await stack.http('POST', '/v1/api-keys/', { token: admin, body: { name: 'billing bot', roles: ['decisions:write'] } });
    expect(b.status).toBe(201);
    keyB = b.body.key;
    keyBId = b.body.id;
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
    const policy = await stack.http('POST', '/v1/policies/', {
      token: admin,
      body: { key: 'log-refunds', name: 'Refunds', defaults: { approvers: ['carol@example.com'], approvalsRequired: 1 } },
    });
    expect(policy.status).toBe(201);

    // refund: by the test key, alice, workflow wf-refunds, created 10 h ago, due in 1 h (stuck: 10 of 11 h gone)
    ids.refund = await create(keyA, { approvers: ['alice@example.com'], workflowRef: 'wf-refunds', timeoutSec: 3600, context: { title: 'Refund order 1001' } });
    await placeInTime(ids.refund, 10, 1);
    // invoice: by "billing bot", bob, created 1 h ago, due in 30 h (not stuck, not today unless late)
    ids.invoice = await create(keyB, { approvers: ['bob@example.com'], timeoutSec: 3600, context: { title: 'Pay invoice 2002' } });
    await placeInTime(ids.invoice, 1, 30);
    // promo: under the policy, carol, no deadline, created 5 h ago; a title with % in it
    ids.promo = await create(keyA, { policy: 'log-refunds', context: { title: 'Discount 100% promo' } });
    await placeInTime(ids.promo, 5, null);
    // done: alice and bob, approved, created 20 h ago, was due 2 h ago
    ids.done = await create(keyB, { approvers: ['alice@example.com', 'bob@example.com'], timeoutSec: 3600, context: { title: 'Refund order 3003' } });
    const vote = await stack.http('POST', `/v1/decisions/${ids.done}/decide`, {
      token: stack.session({ org, email: 'alice@example.com', role: 'member' }),
      body: { decision: 'approve' },
    });
    expect(vote.status).toBe(200);
    await placeInTime(ids.done, 20, -2);
  });
  afterAll(async () => {
    await pg?.end();
    await stack?.stop();
  });

  it('every decision of the org, newest first by default, with its total', async () => {
    const all = await list('');
    expect(all.total).toBe(4);
    expect(all.decisions.map((d) => d.id)).toEqual([ids.invoice, ids.promo, ids.refund, ids.done]);
  });

  it('filters: status, policy, requester (key name or id), approver, workflow, title text', async () => {
    expect(await idsOf('status=APPROVED')).toEqual([ids.done]);
    expect(await idsOf('policy=log-refunds')).toEqual([ids.promo]);
    expect(await idsOf('requester=billing%20bot')).toEqual([ids.invoice, ids.done]);
    expect(await idsOf('requester=API%20key%20Billing%20Bot')).toEqual([ids.invoice, ids.done]);
    expect(await idsOf(`requester=${keyBId}`)).toEqual([ids.invoice, ids.done]);
    expect(await idsOf('approver=ALICE@example.com')).toEqual([ids.refund, ids.done]);
    expect(await idsOf('workflowRef=wf-refunds')).toEqual([ids.refund]);
    expect(await idsOf('q=refund%20ORDER')).toEqual([ids.refund, ids.done]);
    // % and _ are text, not patterns
    expect(await idsOf('q=100%25')).toEqual([ids.promo]);
    expect(await idsOf('q=_')).toEqual([]);
    expect(await idsOf('status=PENDING&approver=alice@example.com')).toEqual([ids.refund]);
  });

  it('created between and due between (from inclusive, to exclusive; no deadline is due never)', async () => {
    const at = (h: number) => encodeURIComponent(new Date(Date.now() + h * HOUR).toISOString());
    expect(await idsOf(`createdFrom=${at(-6)}`)).toEqual([ids.invoice, ids.promo]);
    expect(await idsOf(`createdFrom=${at(-12)}&createdTo=${at(-3)}`)).toEqual([ids.promo, ids.refund]);
    expect(await idsOf(`dueFrom=${at(0)}`)).toEqual([ids.invoice, ids.refund]);
    expect(await idsOf(`dueTo=${at(2)}`)).toEqual([ids.refund, ids.done]);
    expect(await idsOf(`dueFrom=${at(-3)}&dueTo=${at(2)}`)).toEqual([ids.refund, ids.done]);
  });

  it('sort by created or due, ascending or descending', async () => {
    expect(await idsOf('sort=created&order=asc')).toEqual([ids.done, ids.refund, ids.promo, ids.invoice]);
    // due ascending: soonest first, no deadline last
    expect(await idsOf('sort=due&order=asc')).toEqual([ids.done, ids.refund, ids.invoice, ids.promo]);
    expect(await idsOf('sort=due&order=desc')).toEqual([ids.promo, ids.invoice, ids.refund, ids.done]);
  });

  it('pages: limit and offset over the same order, total of the whole filtered set', async () => {
    const first = await list('sort=created&order=asc&limit=3');
    const second = await list('sort=created&order=asc&limit=3&offset=3');
    expect({ first: first.decisions.map((d) => d.id), second: second.decisions.map((d) => d.id), total: [first.total, second.total] }).toEqual({
      first: [ids.done, ids.refund, ids.promo],
      second: [ids.invoice],
      total: [4, 4],
    });
  });

  it('views: stuck (PENDING past 75% of its time) and expiring today', async () => {
    expect(await idsOf('view=stuck')).toEqual([ids.refund]);
    // refund is due in 1 h; the invoice in 30 h is past the end of any day; done is not PENDING
    await pg.query('UPDATE decisions.decisions SET expires_at = $2 WHERE id = $1', [ids.refund, new Date(Date.now() + 60_000)]);
    expect(await idsOf('view=expiring_today')).toEqual([ids.refund]);
    // the day ends in the time zone asked for: Kiritimati (UTC+14) and Pago Pago (UTC-11) are 25 h apart
    const late = await idsOf('view=expiring_today&tz=Pacific/Kiritimati');
    const early = await idsOf('view=expiring_today&tz=Pacific/Pago_Pago');
    expect([...late, ...early].every((id) => id === ids.refund)).toBe(true);
    await placeInTime(ids.refund, 10, 1);
  });

  it('a reviewer keeps only the decisions naming them, whatever the filters', async () => {
    const bob = stack.session({ org, email: 'bob@example.com', role: 'reviewer' });
    expect(await idsOf('', bob)).toEqual([ids.invoice, ids.done]);
    expect(await idsOf('approver=alice@example.com', bob)).toEqual([ids.done]);
    const csv = await stack.http('GET', '/v1/decisions/export.csv', { token: bob });
    expect(
      linesOf(csv.text)
        .slice(1)
        .map((l) => l.split(',')[0]),
    ).toEqual([ids.invoice, ids.done]);
  });

  it('unknown or malformed parameters are a 400 with the issue named', async () => {
    for (const [query, path] of [
      ['title=x', 'query'],
      ['sort=name', 'query.sort'],
      ['view=late', 'query.view'],
      ['createdFrom=yesterday', 'query.createdFrom'],
      ['tz=Mars/Olympus', 'query.tz'],
    ]) {
      const res = await stack.http('GET', `/v1/decisions/?${query}`, { token: admin });
      expect({ query, status: res.status, error: res.body.error }).toEqual({ query, status: 400, error: 'invalid_request' });
      expect(res.body.issues.map((i: { path: string }) => i.path).join(' ')).toContain(path);
      const csv = await stack.http('GET', `/v1/decisions/export.csv?${query}`, { token: admin });
      expect({ query, status: csv.status }).toEqual({ query, status: 400 });
    }
    expect((await stack.http('GET', '/v1/decisions/export.csv?limit=5', { token: admin })).status).toBe(400);
  });

  it('the CSV export: the filtered set with a header, readable columns, formulas defused', async () => {
    await pg.query(`UPDATE decisions.decisions SET context = jsonb_set(context, '{title}', '"=HYPERLINK(\\"x\\")"') WHERE id = $1`, [ids.invoice]);
    const res = await stack.http('GET', '/v1/decisions/export.csv?requester=billing%20bot&sort=created&order=asc', { token: admin });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="decisions-\d{4}-\d{2}-\d{2}\.csv"$/);
    const lines = linesOf(res.text);
    expect(lines[0]).toBe(
      'id,status,title,policy,policyVersion,requester,approvers,decidedBy,note,workflowRef,externalRunId,stepRef,createdAt,expiresAt,resolvedAt,consumedAt,consumedBy',
    );
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(new RegExp(`^${ids.done},APPROVED,Refund order 3003,,,API key billing bot,alice@example.com bob@example.com,alice@example.com,`));
    expect(lines[2]).toContain(`${ids.invoice},PENDING,"'=HYPERLINK(""x"")",`);
  });

  describe('at scale (a second org of 3,000 decisions)', () => {
    let big: { org: string; admin: string; apiKey: string };
    beforeAll(async () => {
      big = await stack.newOrg();
      const seed = await create(big.apiKey, { approvers: ['ops@example.com'], timeoutSec: 86_400, context: { title: 'Seed' } });
      const cols: string[] = (
        await pg.query(
          `SELECT column_name FROM information_schema.columns WHERE table_schema = 'decisions' AND table_name = 'decisions' ORDER BY ordinal_position`,
        )
      ).rows.map((r: { column_name: string }) => r.column_name);
      const value = (c: string) =>
        ({
          id: `d.id || '_' || g`,
          external_run_id: `'bulk-' || g`,
          created_at: `d.created_at - g * interval '1 minute'`,
          expires_at: `d.expires_at + (g % 97) * interval '1 hour'`,
        })[c] ?? `d.${c}`;
      await pg.query(
        `INSERT INTO decisions.decisions (${cols.join(', ')}) SELECT ${cols.map(value).join(', ')} FROM decisions.decisions d, generate_series(1, 2999) g WHERE d.id = $1`,
        [seed],
      );
      await pg.query('ANALYZE decisions.decisions');
    });

    it('a CSV of more rows than one chunk comes whole, in order, sent chunked', async () => {
      const res = await stack.http('GET', '/v1/decisions/export.csv?sort=due&order=asc', { token: big.admin });
      expect(res.status).toBe(200);
      expect(res.headers.get('transfer-encoding')).toBe('chunked');
      expect(res.headers.get('content-length')).toBeNull();
      const rows = linesOf(res.text).slice(1);
      expect(rows).toHaveLength(3000);
      const exported = rows.map((l) => l.split(',')[0]);
      expect(new Set(exported).size).toBe(3000);
      const due = rows.map((l) => Date.parse(l.split(',')[13]!));
      expect(due.every((t, i) => i === 0 || t >= due[i - 1]!)).toBe(true);
      // the list's pages in the same order
      const page = await list('sort=due&order=asc&limit=200&offset=600', big.admin);
      expect(page.decisions.map((d) => d.id)).toEqual(exported.slice(600, 800));
    });

    it('the page sorted by due reads the decisions_org_due index, not a sort of the whole org (EXPLAIN)', async () => {
      const sql = `SELECT id FROM decisions.decisions WHERE org_id = $1 ORDER BY coalesce(expires_at, 'infinity'::timestamptz) asc, id asc LIMIT 50`;
      const planOf = async () => JSON.stringify((await pg.query(`EXPLAIN (FORMAT JSON) ${sql}`, [big.org])).rows[0]['QUERY PLAN']);
      const withIndex = await planOf();
      expect(withIndex).toContain('decisions_org_due');
      expect(withIndex).not.toContain('"Node Type":"Sort"');
      // without it, every decision of the org is read and sorted for a page of 50
      await pg.query('BEGIN');
      try {
        await pg.query('DROP INDEX decisions.decisions_org_due');
        expect(await planOf()).toMatch(/"Node Type":"(Incremental )?Sort"/);
      } finally {
        await pg.query('ROLLBACK');
      }
    });
  });
});
