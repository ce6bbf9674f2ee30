import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDb, migrate, type Knex } from '@approvals/shared';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';
import { migrations } from '../src/migrations';
import { createAccessStore } from '../src/store/access.store';

/**
 * A session's user row is written at most once a minute per user and process, and the
 * requests that arrive while it is written wait for that one write instead of each
 * writing the same row (a stampede on its row lock every minute under load).
 */
describe('session users', () => {
  let pg: TestDatabase;
  let db: Knex;
  let store: ReturnType<typeof createAccessStore>;
  let userWrites = 0;

  beforeAll(async () => {
    pg = await createTestDatabase('accessusers');
    db = createDb({ url: pg.url, schema: 'access' });
    await migrate(db, 'access', migrations);
    store = createAccessStore(db);
    db.on('query', (q: { sql: string }) => {
      if (/^insert into "users"/i.test(q.sql)) userWrites++;
    });
  });
  afterAll(async () => {
    await db?.destroy();
    await pg?.drop();
  });

  const user = { org: 'org_u', id: 'usr_1', email: 'one@example.com', role: 'member' };

  it('writes the row once for requests that arrive together, and not again within the minute', async () => {
    await store.ensureOrg('org_u');
    userWrites = 0;
    await Promise.all(Array.from({ length: 16 }, () => store.touchUser(user)));
    expect(userWrites).toBe(1);
    expect(await db('users').where({ org_id: 'org_u', id: 'usr_1' }).first('email', 'role')).toEqual({ email: 'one@example.com', role: 'member' });

    await store.touchUser(user);
    expect(userWrites).toBe(1);
  });

  it('writes again at once when the email or the role changed', async () => {
    userWrites = 0;
    await Promise.all([store.touchUser({ ...user, role: 'admin' }), store.touchUser({ ...user, role: 'admin' })]);
    expect(userWrites).toBe(1);
    expect(await db('users').where({ org_id: 'org_u', id: 'usr_1' }).first('email', 'role')).toEqual({ email: 'one@example.com', role: 'admin' });
  });

  it('lets the next request try again after a write that failed', async () => {
    const ghost = { org: 'org_missing', id: 'usr_2', email: 'two@example.com', role: 'member' };
    // No org row: the user's foreign key refuses it, for every request waiting on it.
    const results = await Promise.allSettled([store.touchUser(ghost), store.touchUser(ghost)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    await store.ensureOrg('org_missing');
    userWrites = 0;
    await store.touchUser(ghost);
    expect(userWrites).toBe(1);
    expect(await db('users').where({ org_id: 'org_missing', id: 'usr_2' }).first('email')).toEqual({ email: 'two@example.com' });
  });
});
