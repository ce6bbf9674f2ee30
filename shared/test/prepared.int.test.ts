import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MAX_PREPARED, createDb, preparedName, sendPrepared, type Knex } from '@approvals/shared';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';

/**
 * Statements sent with `sendPrepared` go to PostgreSQL as named prepared statements (pg's
 * query `name`): parsed and planned once per connection, not on every call (shared/src/db.ts).
 */
describe('prepared statements', () => {
  let tdb: TestDatabase;
  let db: Knex;
  // One connection, so the session that prepared a statement is the one asked about it.
  const prepared = async (): Promise<Array<{ name: string; statement: string }>> =>
    (await db.raw('SELECT name, statement FROM pg_prepared_statements ORDER BY name')).rows;

  beforeAll(async () => {
    tdb = await createTestDatabase('prepared');
    db = createDb({ url: tdb.url, schema: 'prep', poolMax: 1 });
    await db.raw('CREATE SCHEMA prep');
    await db.raw('CREATE TABLE prep.items (id text PRIMARY KEY, a int NOT NULL)');
    await db.raw("INSERT INTO prep.items VALUES ('x', 1), ('y', 2)");
  });
  afterAll(async () => {
    await db?.destroy();
    await tdb?.drop();
  });

  it('prepares a statement once per connection under the name of its text, and answers as knex does', async () => {
    const text = 'SELECT id, a FROM items WHERE id = ?';
    const first = await sendPrepared(db, text, ['x']);
    const second = await sendPrepared(db, text, ['y']);
    expect([first.rows, second.rows]).toEqual([[{ id: 'x', a: 1 }], [{ id: 'y', a: 2 }]]);
    expect((await db.raw(text, ['x'])).rows).toEqual(first.rows);

    const names = await prepared();
    expect(names).toEqual([{ name: preparedName('SELECT id, a FROM items WHERE id = $1'), statement: 'SELECT id, a FROM items WHERE id = $1' }]);
    expect(names[0]!.name).toMatch(/^p_[0-9a-f]{24}$/);
    // In a transaction too, on its connection (the only one): the same statement, not another.
    await db.transaction(async (trx) => {
      expect((await sendPrepared(trx, text, ['y'])).rows).toEqual([{ id: 'y', a: 2 }]);
    });
    expect(await prepared()).toHaveLength(1);
  });

  it('names each text apart, and names no more than MAX_PREPARED texts', () => {
    expect(preparedName('SELECT 1')).toBe(preparedName('SELECT 1'));
    expect(preparedName('SELECT 1')).not.toBe(preparedName('SELECT 2'));
    for (let i = 0; i < MAX_PREPARED; i++) preparedName(`SELECT ${i} AS filler`);
    expect(preparedName('SELECT a text never seen')).toBeUndefined();
    // Texts already named keep their names.
    expect(preparedName('SELECT 1')).toMatch(/^p_/);
  });

  it('keeps answering when a column is added under it, with its columns named; `*` would fail, which is why prepared statements name theirs', async () => {
    // The hazard, shown with a `*` prepared by hand (the test above used up the names).
    await db.raw("PREPARE star AS SELECT * FROM items WHERE id = 'x'");
    await db.raw('EXECUTE star');
    const before = (await sendPrepared(db, 'SELECT id, a FROM items WHERE id = ?', ['x'])).rows;

    await db.raw('ALTER TABLE prep.items ADD COLUMN b int');
    expect((await sendPrepared(db, 'SELECT id, a FROM items WHERE id = ?', ['x'])).rows).toEqual(before);
    await expect(db.raw('EXECUTE star')).rejects.toThrow(/cached plan must not change result type/);
  });
});
