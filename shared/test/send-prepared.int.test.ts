import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDb, isUniqueViolation, preparedName, sendPrepared, type Knex } from '@approvals/shared';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';

/**
 * `sendPrepared`: a hot statement sent to its pg connection directly, compiled once. It
 * must answer exactly as `q.raw(sql, bindings)` does, on the
 * transaction's connection inside one, and refuse what it cannot send as values.
 */
describe('sendPrepared', () => {
  let tdb: TestDatabase;
  let db: Knex;

  beforeAll(async () => {
    tdb = await createTestDatabase('send_prepared');
    // One connection: a statement that kept it would stall every later one.
    db = createDb({ url: tdb.url, schema: 'sp', poolMax: 1 });
    await db.raw('CREATE SCHEMA sp');
    await db.raw('CREATE TABLE sp.items (id text PRIMARY KEY, a int NOT NULL, at timestamptz, tags text[], doc jsonb)');
    await db.raw("INSERT INTO sp.items (id, a) VALUES ('x', 1), ('y', 2)");
  });
  afterAll(async () => {
    await db?.destroy();
    await tdb?.drop();
  });

  it("answers as knex's raw statement does, named and positional bindings alike, as a named prepared statement", async () => {
    const at = new Date('2026-11-26T10:00:00.123Z');
    const named = `INSERT INTO items (id, a, at, tags, doc) VALUES (:id, :a, :at, :tags, :doc::jsonb)
                   ON CONFLICT (id) DO UPDATE SET a = items.a + :a RETURNING id, a, at, tags, doc, (:a)::int * 2 AS twice`;
    const values = { id: 'z', a: 3, at, tags: ['p', 'q"r'], doc: JSON.stringify({ k: [1, null] }) };
    const mine = await sendPrepared(db, named, values);
    const knexs = await db.raw(named, { ...values, id: 'w' });
    expect(mine.rows).toEqual([{ id: 'z', a: 3, at, tags: ['p', 'q"r'], doc: { k: [1, null] }, twice: 6 }]);
    expect(knexs.rows).toEqual([{ ...mine.rows[0], id: 'w' }]);
    expect(mine.rowCount).toBe(1);
    // The same text again: the conflict arm, with the values of this call.
    expect((await sendPrepared(db, named, { ...values, a: 4 })).rows[0]).toMatchObject({ id: 'z', a: 7, twice: 8 });

    const positional = 'SELECT id, a FROM items WHERE id = ANY(?::text[]) AND a >= ? ORDER BY id';
    expect((await sendPrepared(db, positional, [['x', 'y', 'nope'], 2])).rows).toEqual([{ id: 'y', a: 2 }]);
    expect((await sendPrepared(db, positional, [['x', 'y'], 0])).rows).toEqual((await db.raw(positional, [['x', 'y'], 0])).rows);
    // A null value, and a name bound twice.
    expect((await sendPrepared(db, 'SELECT :v::int IS NULL AS none, coalesce(:v::int, :w) AS pick', { v: null, w: 9 })).rows).toEqual([
      { none: true, pick: 9 },
    ]);

    const statements = (await db.raw('SELECT name, statement FROM pg_prepared_statements ORDER BY statement')).rows as Array<{
      name: string;
      statement: string;
    }>;
    const positionalText = 'SELECT id, a FROM items WHERE id = ANY($1::text[]) AND a >= $2 ORDER BY id';
    expect(statements).toContainEqual({ name: preparedName(positionalText), statement: positionalText });
    expect(statements.some((s) => s.statement.startsWith('INSERT INTO items (id, a, at, tags, doc) VALUES ($1, $2, $3, $4, $5::jsonb)'))).toBe(true);
  });

  it("runs on the transaction's connection inside one: its writes are the transaction's, rolled back with it", async () => {
    await expect(
      db.transaction(async (trx) => {
        await sendPrepared(trx, 'INSERT INTO items (id, a) VALUES (?, ?)', ['t1', 10]);
        // Seen by the transaction's next statement, knex's or its own.
        expect((await sendPrepared(trx, 'SELECT a FROM items WHERE id = ? FOR UPDATE', ['t1'])).rows).toEqual([{ a: 10 }]);
        expect(await trx('items').where({ id: 't1' }).first('a')).toEqual({ a: 10 });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect((await sendPrepared(db, 'SELECT count(*)::int AS n FROM items WHERE id = ?', ['t1'])).rows).toEqual([{ n: 0 }]);
  });

  it("passes PostgreSQL's errors on and gives its connection back, so the next statement runs", async () => {
    const err = await sendPrepared(db, 'INSERT INTO items (id, a) VALUES (?, ?)', ['x', 5]).catch((e: unknown) => e);
    expect(isUniqueViolation(err, 'items_pkey')).toBe(true);
    // The pool has one connection: every call below needs it back.
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => sendPrepared<{ i: number }>(db, 'SELECT ?::int AS i', [i])));
    expect(many.map((r) => r.rows[0]!.i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('refuses a value it would have to write into the text, and an undefined value, before sending anything', async () => {
    await expect(sendPrepared(db, 'SELECT ?? FROM items WHERE id = ?', ['a', 'x'])).rejects.toThrow(/written into the text/);
    await expect(sendPrepared(db, 'SELECT :col: FROM items WHERE id = :id', { col: 'a', id: 'x' })).rejects.toThrow(/written into the text/);
    await expect(sendPrepared(db, 'SELECT a FROM items WHERE id = :id', { id: db.raw("'x'") })).rejects.toThrow(/written into the text/);
    await expect(sendPrepared(db, 'SELECT a FROM items WHERE id = :id', { id: undefined })).rejects.toThrow(/undefined binding/);
    // Too few or too many positional values: knex's own refusal.
    await expect(sendPrepared(db, 'SELECT a FROM items WHERE id = ? AND a = ?', ['x'])).rejects.toThrow();
    expect((await sendPrepared(db, 'SELECT a FROM items WHERE id = ?', ['x'])).rows).toEqual([{ a: 1 }]);
  });
});
