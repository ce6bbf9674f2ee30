import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from 'pg';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { DECISION_COLUMNS } from '../src/store/decision.row';

/** Reads of a whole decision name its columns (prepared statements never select `*`): the list is the table. */
describe('DECISION_COLUMNS', () => {
  let stack: Stack;
  let pg: Client;

  beforeAll(async () => {
    stack = await startStack({ label: 'deccols', services: ['decisions'] });
    pg = new Client({ connectionString: stack.db.url });
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await stack?.stop();
  });

  it('names every column of decisions.decisions once, after every migration', async () => {
    const { rows } = await pg.query(`SELECT column_name FROM information_schema.columns WHERE table_schema = 'decisions' AND table_name = 'decisions'`);
    expect([...DECISION_COLUMNS].sort()).toEqual(rows.map((r: { column_name: string }) => r.column_name).sort());
    expect(new Set(DECISION_COLUMNS).size).toBe(DECISION_COLUMNS.length);
  });
});
