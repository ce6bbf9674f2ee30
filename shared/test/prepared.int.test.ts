import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MAX_PREPARED, PREPARED, createDb, preparedName, type Knex } from '@approvals/shared';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';

/**
 * Statements marked PREPARED go to PostgreSQL as named prepared statements: parsed and
 * planned once per connection, not on every call (shared/src/db.ts).
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

  it('prepares a marked statement once per connection under the name of its text, and answers as an unmarked one does', async () => {
    const text = 'SELECT id, a FROM items WHERE id = ?';
    const first = await db.raw(text, ['x']).options(PREPARED);
    const second = await db.raw(text, ['y']).options(PREPARED);
    expect([first.rows, second.rows]).toEqual([[{ id: 'x', a: 1 }], [{ id: 'y', a: 2 }]]);
    expect((await db.raw(text, ['x'])).rows).toEqual(first.rows);

    const names = await prepared();
    expect(names).toEqual([{ name: preparedName('SELECT id, a FROM items WHERE id = $1'), statement: 'SELECT id, a FROM items WHERE id = $1' }]);
    expect(names[0]!.name).toMatch(/^p_[0-9a-f]{24}$/);
    // A query builder marked the same way, in a transaction too.
    await db.transaction(async (trx) => {
      expect(await trx('items').first('id', 'a').where({ id: 'y' }).options(PREPARED)).toEqual({ id: 'y', a: 2 });
    });
    expect(await prepared()).toHaveLength(2);
  });

  it('names each text apart, and names no more than MAX_PREPARED texts', () => {
    expect(preparedName('SELECT 1')).toBe(preparedName('SELECT 1'));
    expect(preparedName('SELECT 1')).not.toBe(preparedName('SELECT 2'));
    for (let i = 0; i < MAX_PREPARED; i++) preparedName(`SELECT ${i} AS filler`);
    expect(preparedName('SELECT a text never seen')).toBeUndefined();
    // Texts already named keep their names.
    expect(preparedName('SELECT 1')).toMatch(/^p_/);
  });

  it('keeps answering when a column is added under it, with its columns named; `*` would fail, which is why marked statements name theirs', async () => {
    // The hazard, shown with a `*` prepared by hand (the test above used up the names).
    await db.raw("PREPARE star AS SELECT * FROM items WHERE id = 'x'");
    await db.raw('EXECUTE star');
    const before = (await db.raw('SELECT id, a FROM items WHERE id = ?', ['x']).options(PREPARED)).rows;

    await db.raw('ALTER TABLE prep.items ADD COLUMN b int');
    expect((await db.raw('SELECT id, a FROM items WHERE id = ?', ['x']).options(PREPARED)).rows).toEqual(before);
    await expect(db.raw('EXECUTE star')).rejects.toThrow(/cached plan must not change result type/);
  });
});
