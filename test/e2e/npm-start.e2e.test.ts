import { afterAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { NATS_GOGC, NATS_GOMAXPROCS, freePort } from '@approvals/shared/infra';
import { createTestDatabase, waitFor, type TestDatabase } from '@approvals/shared/testing';
import { SERVICE_NODE_FLAGS } from '../../deploy/src/processes';

/**
 * `npm start` as a user runs it: the real entry (`deploy/local/start.js`) as a child
 * process with its own nats-server, the six services as separate processes, then the
 * admin CLI against the same database and data folder, and Ctrl-C at the end.
 */
const ROOT = join(__dirname, '..', '..');
const START = join(ROOT, 'deploy', 'local', 'start.js');
const ADMIN = join(ROOT, 'deploy', 'local', 'admin.js');
const SERVICES = ['gateway', 'decisions', 'policies', 'notifier', 'surfaces', 'scheduler'];

function processGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The processes in a process group, from /proc: each one's argv and environment. */
function processesOf(pgid: number): Array<{ argv: string[]; env: string[] }> {
  const out: Array<{ argv: string[]; env: string[] }> = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      // stat: "pid (comm) state ppid pgrp …"; comm may hold spaces, so read after its ')'.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== pgid) continue;
      const nulSeparated = (file: string) => readFileSync(`/proc/${pid}/${file}`, 'utf8').split('\0').filter(Boolean);
      out.push({ argv: nulSeparated('cmdline'), env: nulSeparated('environ') });
    } catch {
      // gone since the listing
    }
  }
  return out;
}

async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

interface Started {
  proc: ChildProcess;
  pid: number;
  env: NodeJS.ProcessEnv;
  port: number;
  baseUrl: string;
  dataDir: string;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const launched: Started[] = [];

/** `node deploy/local/start.js` in a process group of its own, with a fresh data folder. */
async function launch(extraEnv: Record<string, string>, sharedDataDir?: string, viaNpm = false): Promise<Started> {
  const dataDir = sharedDataDir ?? mkdtempSync(join(tmpdir(), 'approvals-npm-start-'));
  const [port, natsPort] = await distinctFreePorts(2);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    APPROVALS_DATA_DIR: dataDir,
    PORT: String(port),
    EMBEDDED_NATS_PORT: String(natsPort),
    LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  for (const k of ['NATS_URL', 'AUTH_JWT_SECRET', 'PUBLIC_BASE_URL', 'NODE_ENV', 'GOGC', 'GOMAXPROCS']) delete env[k]; // jest sets NODE_ENV; a user's shell does not (GOGC, GOMAXPROCS: the embedded NATS's defaults are checked)
  if (!extraEnv.DATABASE_URL) delete env.DATABASE_URL;
  // detached: its own process group, so afterAll can kill the supervisor, the services and nats-server at once.
  const proc = viaNpm
    ? spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, [START], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (b: Buffer) => {
    output += b.toString();
  };
  proc.stdout!.on('data', collect);
  proc.stderr!.on('data', collect);
  const started: Started = {
    proc,
    pid: proc.pid!,
    env,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    dataDir,
    output: () => output,
    exited: new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  launched.push(started);
  return started;
}

async function http(baseUrl: string, method: string, path: string, token?: string) {
  const res = await fetch(`${baseUrl}${path}`, { method, headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* keep the text */
  }
  return { status: res.status, body };
}

/** Polls /health until 200 with every service; fails with the output when start exits or the time runs out. */
async function waitUp(s: Started, timeoutMs = 90_000) {
  let exitedEarly: number | null = null;
  const health = await waitFor(
    async () => {
      if (s.proc.exitCode !== null) {
        exitedEarly = s.proc.exitCode;
        return { status: 0, body: undefined };
      }
      const res = await http(s.baseUrl, 'GET', '/health').catch(() => undefined);
      return res?.status === 200 ? res : undefined;
    },
    { timeoutMs, intervalMs: 250, what: 'GET /health 200' },
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n--- npm start output ---\n${s.output().slice(-4000)}`);
  });
  expect({ exitedEarly, output: exitedEarly === null ? '' : s.output().slice(-4000) }).toEqual({ exitedEarly: null, output: '' });
  expect(health.body.status).toBe('ok');
  for (const name of SERVICES) expect({ name, ...health.body.services[name] }).toMatchObject({ name, ok: true });
  await waitFor(() => s.output().includes(`Approvals is up: http://localhost:${s.port}`), { timeoutMs: 10_000, what: 'the base URL in the output' });
}

/** Sends SIGINT (to the start process, or to its whole group like Ctrl-C in a terminal) and checks a clean stop. */
async function interruptAndCheck(s: Started, target: 'process' | 'group', signal: NodeJS.Signals = 'SIGINT') {
  const before = s.output().length;
  process.kill(target === 'group' ? -s.pid : s.pid, signal);
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([s.exited, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), 30_000)))]);
  clearTimeout(timer);
  const failed = result === 'timeout' || result.code !== 0;
  expect({ result, tail: failed ? s.output().slice(-4000) : '' }).toEqual({ result: { code: 0, signal: null }, tail: '' });
  expect(s.output()).toMatch(/\[start\] stopped/);
  // A clean stop is quiet: start's own lines only; what the services say while their
  // database and NATS go away with them is in the data folder's stop.log, not the terminal.
  const stopping = s.output().slice(before).split('\n').filter(Boolean);
  expect(stopping.filter((l) => !l.startsWith('[start] '))).toEqual([]);
  expect(existsSync(join(s.dataDir, 'stop.log'))).toBe(true);
  if (signal !== 'SIGINT') expect(s.output()).toContain(`${signal}: stopping services`);
  // nothing listens any more: fetch itself fails
  expect(
    await http(s.baseUrl, 'GET', '/health').then(
      (r) => r.status,
      (err: Error) => err.name,
    ),
  ).toBe('TypeError');
  // the services and nats-server (same process group) are gone too
  await waitFor(() => !processGroupAlive(s.pid), { timeoutMs: 5000, what: 'every process of npm start to exit' });
  expect(existsSync(join(s.dataDir, 'runtime.json'))).toBe(false);
}

afterAll(async () => {
  for (const s of launched) {
    if (processGroupAlive(s.pid)) {
      try {
        process.kill(-s.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    rmSync(s.dataDir, { recursive: true, force: true });
  }
});

describe('npm start (process level)', () => {
  let db: TestDatabase | undefined;
  afterAll(async () => {
    // The processes must be gone before the database can be dropped.
    for (const s of launched) if (processGroupAlive(s.pid)) process.kill(-s.pid, 'SIGKILL');
    await db?.drop().catch(() => undefined);
  });

  it('with DATABASE_URL: starts its own NATS, serves, works with the admin CLI, stops cleanly on SIGINT', async () => {
    db = await createTestDatabase('npmstart');
    const s = await launch({ DATABASE_URL: db.url });
    const get = (path: string, token?: string) => http(s.baseUrl, 'GET', path, token);
    /**
     * Runs the admin CLI the way `npm run -s admin -- …` does; the last stdout line is the
     * answer. Asynchronously: a `spawnSync` here held this process's event loop for the CLI's
     * seconds, so fetch's pool never saw the gateway close an idle kept-alive connection
     * (its keep-alive timeout, 5 s) and sent the next request on it ("other side closed").
     */
    const admin = (args: string[]) =>
      new Promise<string>((resolve, reject) => {
        execFile(
          process.execPath,
          [ADMIN, ...args],
          { cwd: ROOT, env: { ...s.env, ADMIN_SKIP_BUILD: '1' }, encoding: 'utf8', timeout: 30_000 },
          (err, stdout, stderr) => {
            if (err) return reject(new Error(`admin ${args.join(' ')} exited ${err.code ?? err.signal}: ${stderr}`));
            const lines = stdout.trim().split('\n');
            resolve(lines[lines.length - 1]!);
          },
        );
      });

    // ---- up: /health 200 with every service, and the base URL printed
    await waitUp(s);
    // each service is its own process, run with the services' Node flags (no memory reducer)
    const group = processesOf(s.pid);
    const serviceArgv = group.map((p) => p.argv).filter((argv) => argv.some((a) => a.endsWith(join('dist', 'main.js'))));
    expect(
      serviceArgv
        .map((argv) =>
          argv
            .find((a) => a.endsWith(join('dist', 'main.js')))!
            .split('/')
            .at(-3),
        )
        .sort(),
    ).toEqual([...SERVICES].sort());
    for (const argv of serviceArgv) expect(argv.slice(1, 1 + SERVICE_NODE_FLAGS.length)).toEqual(SERVICE_NODE_FLAGS);
    // and the embedded nats-server with its collector's target and one Go processor
    const natsServer = group.filter((p) => p.argv[0]?.endsWith('nats-server'));
    expect(natsServer.map((p) => p.env.filter((e) => e.startsWith('GOGC=')))).toEqual([[`GOGC=${NATS_GOGC}`]]);
    expect(natsServer.map((p) => p.env.filter((e) => e.startsWith('GOMAXPROCS=')))).toEqual([[`GOMAXPROCS=${NATS_GOMAXPROCS}`]]);
    // secrets, the NATS store and the runtime file went to the data folder given
    expect(existsSync(join(s.dataDir, 'secrets.json'))).toBe(true);
    expect(existsSync(join(s.dataDir, 'nats'))).toBe(true);
    expect(JSON.parse(readFileSync(join(s.dataDir, 'runtime.json'), 'utf8'))).toMatchObject({ baseUrl: `http://localhost:${s.port}`, pid: s.pid });
    expect(s.output()).toContain(`nats-server with JetStream on 127.0.0.1:${s.env.EMBEDDED_NATS_PORT}`);
    // Made by the admin user before the services started: they may not make it.
    expect(s.output()).toContain('[start] JetStream provisioned (streams, bucket, durable consumers)');
    // the bus requires credentials: one user per service, generated into the data folder
    expect(existsSync(join(s.dataDir, 'nats-auth.json'))).toBe(true);
    const users = JSON.parse(readFileSync(join(s.dataDir, 'nats-auth.json'), 'utf8'));
    expect(Object.keys(users).sort()).toEqual(['admin', ...SERVICES].sort());
    await expect(connect({ servers: `nats://127.0.0.1:${s.env.EMBEDDED_NATS_PORT}`, reconnect: false })).rejects.toThrow(/Authorization/i);
    const asNotifier = await connect({
      servers: `nats://127.0.0.1:${s.env.EMBEDDED_NATS_PORT}`,
      user: 'notifier',
      pass: users.notifier.password,
      reconnect: false,
    });
    await expect(asNotifier.request('svc.decisions.surface_vote', '{}', { timeout: 2000 })).rejects.toThrow(/Permission/i);
    await asNotifier.close();
    const secrets = JSON.parse(readFileSync(join(s.dataDir, 'secrets.json'), 'utf8'));
    expect(secrets).toEqual({
      AUTH_JWT_SECRET: expect.any(String),
      SECRETS_KEY: expect.any(String),
      RECEIPT_SIGNING_KEY: expect.stringContaining('-----BEGIN PRIVATE KEY-----'),
    });
    // The receipt key npm start generated signs: its public key is the JWKS's (docs/receipts.md).
    const receiptKeys = await get('/.well-known/jwks.json');
    expect(receiptKeys.status).toBe(200);
    expect(receiptKeys.body.keys.map((k: { x: string }) => k.x)).toEqual([createPublicKey(secrets.RECEIPT_SIGNING_KEY).export({ format: 'jwk' }).x]);
    expect(s.output()).not.toMatch(/embedded PostgreSQL/);

    // ---- bootstrap: one JSON line, the key works on a worker route
    const boot = JSON.parse(await admin(['bootstrap', '--org', 'e2e-org', '--email', 'admin@e2e.test']));
    expect(boot).toEqual({
      orgId: 'e2e-org',
      sessionToken: expect.any(String),
      apiKey: expect.stringMatching(/^ak_/),
      signInUrl: `http://localhost:${s.port}/app/login#token=${boot.sessionToken}`,
    });
    // The web app is served by the same process, built by npm start.
    const appPage = await fetch(`http://localhost:${s.port}/app/`);
    expect(appPage.status).toBe(200);
    expect(await appPage.text()).toContain('<div id="root">');
    expect(await get('/v1/worker/policies', boot.apiKey)).toEqual({ status: 200, body: { policies: [] } });
    // the bootstrap session is signed with the secret npm start uses: an admin session
    expect((await get('/v1/api-keys/', boot.sessionToken)).status).toBe(200);
    // and the key's creation is in the audit log, like any key's
    const audit = await get('/v1/audit/', boot.sessionToken);
    expect(audit.body.entries).toContainEqual(expect.objectContaining({ action: 'api_key.created', actor: 'usr_admin@e2e.test' }));

    // a context contract is checked by the built decisions process (in its worker threads)
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${s.baseUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${boot.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const policy = await post('/v1/worker/policies', {
      key: 'refunds',
      name: 'Refunds',
      defaults: { approvers: ['admin@e2e.test'] },
      contextSchema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
    });
    expect(policy.status).toBe(201);
    const refused = await post('/v1/worker/decisions', { engine: 'api', externalRunId: 'r1', stepRef: 's', policy: 'refunds', context: { data: {} } });
    expect(refused).toEqual({ status: 422, body: expect.objectContaining({ error: 'context_contract_violation', violations: ['amount: is required'] }) });
    const opened = await post('/v1/worker/decisions', {
      engine: 'api',
      externalRunId: 'r1',
      stepRef: 's',
      policy: 'refunds',
      context: { data: { amount: 12 } },
    });
    expect(opened.status).toBe(201);

    // ---- session: an admin token
    const session = await admin(['session', '--org', 'e2e-org', '--email', 'x@e2e.test', '--role', 'admin']);
    expect(session).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const keys = await get('/v1/api-keys/', session);
    expect(keys.status).toBe(200);
    const bootKey = keys.body.apiKeys.find((k: { prefix: string }) => boot.apiKey.startsWith(`${k.prefix}_`));
    expect(bootKey).toMatchObject({ name: 'bootstrap', revokedAt: null });

    // ---- revoke: the very next worker call is 401
    const revoked = await http(s.baseUrl, 'DELETE', `/v1/api-keys/${bootKey.id}`, session);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revokedAt).toEqual(expect.any(String));
    const after = await get('/v1/worker/policies', boot.apiKey);
    expect(after.status).toBe(401);
    expect(after.body.error).toBe('unauthorized');

    // ---- SIGINT to the start process: exit 0 within 30 s, nothing left running
    await interruptAndCheck(s, 'process');
  }, 150_000);

  it('without DATABASE_URL: embedded PostgreSQL in the data folder, and Ctrl-C (SIGINT to the whole group) stops everything with exit 0', async () => {
    const [pgPort] = await distinctFreePorts(1);
    const s = await launch({ EMBEDDED_PG_PORT: String(pgPort) });
    await waitUp(s);
    expect(s.output()).toContain(`embedded PostgreSQL on 127.0.0.1:${pgPort} (data in ${join(s.dataDir, 'pg')})`);
    expect(existsSync(join(s.dataDir, 'pg', 'PG_VERSION'))).toBe(true);

    // A second npm start on the same port, or from the same data folder, says why it cannot run
    // (exit 1) and leaves the first one serving.
    const samePort = await launch({ EMBEDDED_PG_PORT: String(pgPort), PORT: String(s.port) });
    expect(await samePort.exited).toEqual({ code: 1, signal: null });
    expect(samePort.output()).toContain(`port ${s.port} is already in use`);
    const [otherPort, otherPg, otherNats] = await distinctFreePorts(3);
    const sameData = await launch({ EMBEDDED_PG_PORT: String(otherPg), PORT: String(otherPort), EMBEDDED_NATS_PORT: String(otherNats) }, s.dataDir);
    launched.splice(launched.indexOf(sameData), 1); // shares the first one's folder: not removed twice
    expect(await sameData.exited).toEqual({ code: 1, signal: null });
    expect(sameData.output()).toMatch(/PostgreSQL \(pid \d+\) is already running on .*another `npm start`/);
    expect((await http(s.baseUrl, 'GET', '/health')).status).toBe(200);

    // PostgreSQL killed outright: npm start notices, says so, starts it again on the same data
    // folder and port, and the services answer again (their pools reconnect).
    const postmasterPid = () => Number(readFileSync(join(s.dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const killed = postmasterPid();
    process.kill(killed, 'SIGKILL');
    await waitFor(() => s.output().includes(`embedded PostgreSQL (pid ${killed}) stopped; restarting it in `), { timeoutMs: 10_000, what: 'the stop noticed' });
    const restarted = await waitFor(() => /embedded PostgreSQL restarted \(pid (\d+)\)/.exec(s.output()), {
      timeoutMs: 90_000,
      what: 'PostgreSQL started again',
    });
    expect(Number(restarted[1])).not.toBe(killed);
    expect(postmasterPid()).toBe(Number(restarted[1]));
    const health = await waitFor(
      async () => {
        const res = await http(s.baseUrl, 'GET', '/health').catch(() => undefined);
        return res?.status === 200 ? res : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, what: 'GET /health 200 after the restart' },
    );
    expect(health.body.components.postgres.ok).toBe(true);

    // Ctrl-C reaches PostgreSQL too; what stops then is not started again.
    const beforeStop = s.output().length;
    await interruptAndCheck(s, 'group');
    expect(s.output().slice(beforeStop)).not.toContain('restarting it in');
  }, 240_000);

  it('`npm start` itself: SIGTERM to the npm process (what a supervisor sends) reaches start and stops everything', async () => {
    const [pgPort] = await distinctFreePorts(1);
    const s = await launch({ EMBEDDED_PG_PORT: String(pgPort) }, undefined, true);
    await waitUp(s);
    await interruptAndCheck(s, 'process', 'SIGTERM');
  }, 150_000);
});
