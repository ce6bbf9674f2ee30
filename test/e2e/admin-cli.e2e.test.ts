import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '@approvals/shared/testing';

/** The admin CLI (`npm run admin -- …`) as an operator runs it, against a database of its own. */
const ROOT = join(__dirname, '..', '..');
const ADMIN = join(ROOT, 'deploy', 'local', 'admin.js');

describe('npm run admin -- bootstrap', () => {
  let db: TestDatabase;
  let dataDir: string;
  beforeAll(async () => {
    db = await createTestDatabase('admincli');
    dataDir = mkdtempSync(join(tmpdir(), 'approvals-admin-cli-'));
  });
  afterAll(async () => {
    await db?.drop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  const admin = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: db.url, APPROVALS_DATA_DIR: dataDir, ADMIN_SKIP_BUILD: '1' };
      delete env.NODE_ENV;
      execFile(process.execPath, [ADMIN, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
      );
    });

  it('run twice for the same org, it refuses, names the key it already made and changes nothing; another --name makes another key', async () => {
    const first = await admin(['bootstrap', '--org', 'twice-org', '--email', 'admin@twice.test']);
    expect(first).toMatchObject({ code: 0 });
    const boot = JSON.parse(first.stdout.trim().split('\n').at(-1)!);
    expect(boot).toMatchObject({ orgId: 'twice-org', apiKey: expect.stringMatching(/^ak_/) });

    const again = await admin(['bootstrap', '--org', 'twice-org', '--email', 'admin@twice.test']);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toContain('org twice-org already has an API key named "bootstrap"');
    expect(again.stderr).toContain('bootstrap was already run for it, and nothing was changed');
    expect(again.stderr).toContain('npm run admin -- session --org twice-org --email admin@twice.test --role admin');

    const other = await admin(['bootstrap', '--org', 'twice-org', '--email', 'admin@twice.test', '--name', 'ci']);
    expect(other.code).toBe(0);
    expect(JSON.parse(other.stdout.trim().split('\n').at(-1)!).apiKey).not.toBe(boot.apiKey);

    // one key per name: the refused run minted nothing
    const { default: knex } = await import('knex');
    const k = knex({ client: 'pg', connection: db.url });
    try {
      const rows = await k.withSchema('access').table('api_keys').where({ org_id: 'twice-org' }).select('name');
      expect(rows.map((r: { name: string }) => r.name).sort()).toEqual(['bootstrap', 'ci']);
    } finally {
      await k.destroy();
    }
  }, 120_000);
});
