import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { SERVICE_NAMES, SUBJECT, createLogger, factsHash } from '@approvals/shared';
import {
  ensureDatabase,
  freePort,
  generateNatsUsers,
  startEmbeddedPostgres,
  startNatsServer,
  type LocalNats,
  type LocalPostgres,
} from '@approvals/shared/infra';
import { signSessionToken } from '@approvals/gateway/dist/auth/jwt';
import { ROOT } from './dev-env';
import { SERVICE_NODE_FLAGS, launchServices, waitHealthy, type ServiceProcesses } from './processes';
import { provisionWhenReady } from './provision';

/**
 * `npm run chaos`: the kill -9 run, reproducible. The whole system runs as separate
 * processes (supervised: a killed service is restarted) on a private PostgreSQL and
 * nats-server; a steady load of full flows (create → vote → engine resume → verify →
 * consume, and a second consumer that must be refused) runs at a fixed rate while each
 * service, then nats-server, then PostgreSQL is killed with SIGKILL and brought back.
 * Then it drains and counts what was acknowledged, lost, doubled and resumed; last, with a
 * second decisions replica, it kills one holding creates and measures how soon they are
 * answered (`measureFailover`). It prints the figures and exits 1 if anything was lost or
 * doubled. Loopback only, bounded in time.
 *
 *   npm run chaos -- [--duration 120] [--rate 8]
 */

function say(line: string) {
  process.stderr.write(`[chaos] ${line}\n`);
}

function flag(args: string[], name: string, def: number): number {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : def;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
  return v;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Flow {
  run: string;
  decisionId?: string;
  acknowledged: boolean;
  voted: boolean;
  consumedBy?: string;
  /** A second consumer was told "consumed" (expected) or also got consumed:true (a double). */
  secondConsumer?: 'refused' | 'consumed' | 'error';
  error?: string;
}

interface Fault {
  what: string;
  at: number;
  /** Time until the system answered /health 200 again. */
  recoveredMs?: number;
}

/** The engine stand-in: records every resume it receives, by decision and event id. */
async function engineReceiver(): Promise<{ url: string; resumes: Map<string, Set<string>>; hits: () => number; close(): Promise<void> }> {
  const resumes = new Map<string, Set<string>>();
  let hits = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits++;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: string; data?: { decisionId?: string } };
        const id = body.data?.decisionId;
        if (id && body.id) {
          const s = resumes.get(id) ?? new Set<string>();
          s.add(body.id);
          resumes.set(id, s);
        }
      } catch {
        /* not JSON: ignore */
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    resumes,
    hits: () => hits,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function call(base: string, method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* keep text */
    }
    return { status: res.status, body: parsed };
  } catch (err) {
    return { status: 0, body: { error: 'network', message: (err as Error).message } };
  }
}

/** Repeats a call while the system answers "try again" (5xx, 429, no answer), up to a deadline. */
async function retrying(fn: () => Promise<{ status: number; body: any }>, deadlineMs: number): Promise<{ status: number; body: any }> {
  const end = Date.now() + deadlineMs;
  let last = await fn();
  while ((last.status === 0 || last.status === 429 || last.status >= 500) && Date.now() < end) {
    await sleep(300 + Math.random() * 700);
    last = await fn();
  }
  return last;
}

/** The gateway's count of creates resent because the decisions replica holding them fell silent. */
async function silentCreateResends(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('approvals_bus_resends_total{') && l.includes(`subject="${SUBJECT.decisions.create}"`) && l.includes('reason="silent"'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

interface Failover {
  inFlight: number;
  answered: number;
  /** Resent by the gateway when the killed replica fell silent: the creates it held. */
  resentOnSilence: number;
  /** From the kill to the last create's answer. */
  slowestAfterKillMs: number;
  decisionsPerStep: number[];
}

/**
 * A create in flight on a killed decisions replica: a second decisions replica is started,
 * creates on one run are held in both (the run's advisory lock, which every create takes
 * first, is held here), one replica is killed with SIGKILL and the lock let go. The creates
 * the killed replica held are resent by the gateway once it falls silent (docs/architecture.md,
 * "Timeouts and resends"): how long after the kill the last create is answered says how
 * long a caller waits for that.
 */
async function measureFailover(opts: {
  base: string;
  apiKey: string;
  org: string;
  databaseUrl: string;
  env: NodeJS.ProcessEnv;
  procs: ServiceProcesses;
}): Promise<Failover> {
  // Each held create holds one of its replica's pooled connections (DB_POOL_MAX, 10): fewer
  // than that, so all are in flight even if one replica takes them all.
  const n = 8;
  const run = 'chaos-failover';
  const metricsPort = await freePort();
  const extra = spawn(process.execPath, [...SERVICE_NODE_FLAGS, join(ROOT, 'services', 'decisions', 'dist', 'main.js')], {
    env: { ...opts.env, METRICS_PORT: String(metricsPort) },
    stdio: 'ignore',
  });
  const db = new Client({ connectionString: opts.databaseUrl });
  await db.connect();
  try {
    for (let ready = false; !ready; await sleep(200)) {
      ready = await fetch(`http://127.0.0.1:${metricsPort}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (extra.exitCode !== null) throw new Error('the second decisions replica exited');
    }
    const resentBefore = await silentCreateResends(opts.base);
    await db.query('SELECT pg_advisory_lock(hashtext($1), hashtext($2))', [opts.org, run]);
    const answers: Array<Promise<{ status: number; at: number }>> = [];
    for (let i = 0; i < n; i++) {
      const body = { externalRunId: run, stepRef: `s${i}`, engine: 'api', approvers: ['rev@chaos.test'], context: { title: `Failover ${i}` } };
      answers.push(call(opts.base, 'POST', '/v1/worker/decisions', opts.apiKey, body).then((r) => ({ status: r.status, at: Date.now() })));
    }
    // Every create waits for the lock, in one replica or the other (5 s at most: the gateway waits 10).
    for (let waiting = 0, until = Date.now() + 5_000; waiting < n && Date.now() < until; await sleep(50)) {
      waiting = Number((await db.query(`SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).rows[0].n);
    }
    opts.procs.children.get('decisions')!.kill('SIGKILL');
    const killedAt = Date.now();
    await db.query('SELECT pg_advisory_unlock(hashtext($1), hashtext($2))', [opts.org, run]);
    const done = await Promise.all(answers);
    const counts = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM decisions.decisions WHERE org_id = $1 AND external_run_id = $2 GROUP BY step_ref',
      [opts.org, run],
    );
    const failed = done.filter((d) => d.status !== 201 && d.status !== 200);
    if (failed.length) say(`failover: ${failed.length} creates failed: ${failed.map((d) => d.status).join(', ')}`);
    return {
      inFlight: n,
      answered: done.length - failed.length,
      resentOnSilence: (await silentCreateResends(opts.base)) - resentBefore,
      slowestAfterKillMs: Math.max(...done.map((d) => d.at - killedAt)),
      decisionsPerStep: counts.rows.map((r) => r.n),
    };
  } finally {
    await db.end();
    extra.kill('SIGTERM');
  }
}

export async function main(args: string[]): Promise<number> {
  const durationSec = flag(args, 'duration', 120);
  const rate = flag(args, 'rate', 8);
  const dir = mkdtempSync(join(tmpdir(), 'approvals-chaos-'));
  chmodSync(dir, 0o755);
  const stops: Array<() => Promise<void>> = [];
  try {
    say(`a ${durationSec} s run at ${rate} flows/s; data in ${dir}`);
    const pgPort = await freePort();
    let pg: LocalPostgres = await startEmbeddedPostgres({ dataDir: join(dir, 'pg'), port: pgPort, persistent: true });
    stops.push(() => pg.stop());
    const databaseUrl = await ensureDatabase(pg.url, 'chaos');
    const natsUsers = generateNatsUsers();
    const natsPort = await freePort();
    const startNats = () => startNatsServer({ storeDir: join(dir, 'nats'), port: natsPort, users: natsUsers });
    let nats: LocalNats = await startNats();
    stops.push(() => nats.stop());
    // JetStream made by the admin user before the services start (they may not make it); on
    // file, it is there again when the killed nats-server comes back.
    await provisionWhenReady({
      url: nats.url,
      auth: { user: natsUsers.admin.user, pass: natsUsers.admin.password },
      log: createLogger('chaos-provision', 'silent'),
    });
    const engine = await engineReceiver();
    stops.push(() => engine.close());

    const port = await freePort();
    const secret = randomBytes(24).toString('hex');
    const base = `http://127.0.0.1:${port}`;
    const serviceEnv: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: databaseUrl,
      NATS_URL: nats.url,
      AUTH_JWT_SECRET: secret,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      PORT: String(port),
      LOG_LEVEL: 'error',
      INNGEST_URL: engine.url,
      INNGEST_EVENT_KEY: 'chaos',
      DELIVERY_POLL_MS: '100',
      DELIVERY_RETRY_BASE_MS: '500',
      RATE_LIMIT_PER_KEY_PER_MIN: '100000000',
      RATE_LIMIT_PER_IP_PER_MIN: '100000000',
    };
    const procs = launchServices({ natsUsers, restart: true, env: serviceEnv });
    stops.push(() => procs.stop());
    const health = await waitHealthy(base, 120_000);
    if (!health.ok) throw new Error(`the system did not come up: ${health.last}`);

    const org = 'chaos-org';
    const admin = signSessionToken(secret, { sub: 'usr_admin', email: 'admin@chaos.test', org, role: 'admin' });
    const reviewer = signSessionToken(secret, { sub: 'usr_rev', email: 'rev@chaos.test', org });
    const created = await retrying(() => call(base, 'POST', '/v1/api-keys/', admin, { name: 'chaos', roles: ['decisions:write'] }), 30_000);
    if (created.status !== 201) throw new Error(`could not create an API key: ${created.status} ${JSON.stringify(created.body)}`);
    const apiKey = created.body.key as string;

    const flows: Flow[] = [];
    const runFlow = async (i: number) => {
      const flow: Flow = { run: `chaos-${i}`, acknowledged: false, voted: false };
      flows.push(flow);
      const facts = { order: `ord_${i}`, amount: i };
      const body = {
        externalRunId: flow.run,
        stepRef: 'pay',
        engine: 'engineA',
        approvers: ['rev@chaos.test'],
        factsHash: factsHash(facts),
        context: { title: `Flow ${i}` },
      };
      const open = await retrying(() => call(base, 'POST', '/v1/worker/decisions', apiKey, body), 60_000);
      if (open.status !== 201 && open.status !== 200) {
        flow.error = `create ${open.status}`;
        return;
      }
      flow.acknowledged = true;
      flow.decisionId = open.body.decisionId;
      const vote = await retrying(() => call(base, 'POST', `/v1/decisions/${flow.decisionId}/decide`, reviewer, { decision: 'approve' }), 60_000);
      // A vote whose answer was lost and that is retried comes back already_voted: it counted.
      if (vote.status !== 200 && vote.body?.error !== 'already_voted') {
        flow.error = `vote ${vote.status} ${vote.body?.error ?? ''}`;
        return;
      }
      flow.voted = true;
      const consumer = `worker-${i}`;
      const consume = await retrying(
        () => call(base, 'POST', `/v1/worker/decisions/${flow.decisionId}/consume`, apiKey, { consumer, factsHash: factsHash(facts) }),
        60_000,
      );
      if (consume.status === 200 && consume.body?.consumed) flow.consumedBy = consumer;
      else {
        flow.error = `consume ${consume.status} ${consume.body?.reason ?? consume.body?.error ?? ''}`;
        return;
      }
      const second = await retrying(
        () => call(base, 'POST', `/v1/worker/decisions/${flow.decisionId}/consume`, apiKey, { consumer: `intruder-${i}`, factsHash: factsHash(facts) }),
        60_000,
      );
      flow.secondConsumer = second.status === 409 && second.body?.reason === 'consumed' ? 'refused' : second.body?.consumed === true ? 'consumed' : 'error';
    };

    // ---- steady load with faults spread over it
    const faults: Fault[] = [];
    const targets = [...SERVICE_NAMES, 'nats-server', 'postgresql'];
    const t0 = Date.now();
    const inflight: Promise<void>[] = [];
    const load = (async () => {
      let i = 0;
      while (Date.now() - t0 < durationSec * 1000) {
        inflight.push(runFlow(i++));
        const nextAt = t0 + (i * 1000) / rate;
        await sleep(Math.max(0, nextAt - Date.now()));
      }
    })();
    const chaos = (async () => {
      for (let k = 0; k < targets.length; k++) {
        const at = t0 + ((k + 1) * durationSec * 1000) / (targets.length + 1);
        await sleep(Math.max(0, at - Date.now()));
        const what = targets[k]!;
        const fault: Fault = { what, at: Math.round((Date.now() - t0) / 1000) };
        faults.push(fault);
        say(`t+${fault.at}s: kill -9 ${what}`);
        const killedAt = Date.now();
        if (what === 'nats-server') {
          nats.process.kill('SIGKILL');
          await sleep(1000);
          nats = await startNats();
        } else if (what === 'postgresql') {
          const pidFile = join(dir, 'pg', 'postmaster.pid');
          const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : NaN;
          if (Number.isInteger(pid)) process.kill(pid, 'SIGKILL');
          await sleep(1000);
          // A killed postmaster leaves its children for a moment; starting again recovers from the WAL.
          for (let attempt = 0; ; attempt++) {
            try {
              pg = await startEmbeddedPostgres({ dataDir: join(dir, 'pg'), port: pgPort, persistent: true });
              break;
            } catch (err) {
              if (attempt > 20) throw err;
              await sleep(500);
            }
          }
        } else {
          procs.children.get(what)?.kill('SIGKILL');
        }
        const back = await waitHealthy(base, 60_000);
        fault.recoveredMs = back.ok ? Date.now() - killedAt : undefined;
      }
    })();
    await Promise.all([load, chaos]);
    say(`load done (${flows.length} flows started); waiting for them to finish`);
    await Promise.all(inflight);

    // ---- drain: engine resumes for every approved decision
    const approved = flows.filter((f) => f.voted && f.decisionId);
    const drainEnd = Date.now() + 90_000;
    while (Date.now() < drainEnd && approved.some((f) => !engine.resumes.has(f.decisionId!))) await sleep(500);

    // ---- count
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    let stored = new Set<string>();
    let doubledRuns = 0;
    try {
      stored = new Set((await db.query<{ id: string }>(`SELECT id FROM decisions.decisions WHERE org_id = $1`, [org])).rows.map((r) => r.id));
      doubledRuns =
        (await db.query(`SELECT external_run_id, step_ref FROM decisions.decisions WHERE org_id = $1 GROUP BY 1, 2 HAVING count(*) > 1`, [org])).rowCount ?? 0;
    } finally {
      await db.end();
    }
    say('failover: a second decisions replica, creates held in both, one killed');
    const failover = await measureFailover({
      base,
      apiKey,
      org,
      databaseUrl,
      env: { ...serviceEnv, NATS_USER: natsUsers.decisions.user, NATS_PASSWORD: natsUsers.decisions.password },
      procs,
    });
    const acknowledged = flows.filter((f) => f.acknowledged);
    const lost = acknowledged.filter((f) => !stored.has(f.decisionId!));
    const doubledConsumes = flows.filter((f) => f.secondConsumer === 'consumed');
    const doubledResumes = [...engine.resumes.values()].filter((ids) => ids.size > 1);
    const resumed = approved.filter((f) => engine.resumes.has(f.decisionId!));
    const figures = {
      durationSec,
      rate,
      flowsStarted: flows.length,
      acknowledged: acknowledged.length,
      lost: lost.length,
      doubled: { decisionsPerRunStep: doubledRuns, consumes: doubledConsumes.length, resumeEventIds: doubledResumes.length },
      approved: approved.length,
      resumed: resumed.length,
      consumed: flows.filter((f) => f.consumedBy).length,
      unfinished: flows.filter((f) => f.error).length,
      engineRequests: engine.hits(),
      faults: faults.map((f) => ({ killed: f.what, atSec: f.at, healthyAgainMs: f.recoveredMs ?? null })),
      failover,
    };
    const doubled = doubledRuns + doubledConsumes.length + doubledResumes.length;
    process.stdout.write(
      [
        '',
        '| figure | value |',
        '|---|---|',
        `| flows started (${rate}/s for ${durationSec} s) | ${figures.flowsStarted} |`,
        `| acknowledged creates | ${figures.acknowledged} |`,
        `| lost (acknowledged, not stored) | ${figures.lost} |`,
        `| doubled (decisions per run/step, consumes, resume event ids) | ${doubled} (${doubledRuns}, ${doubledConsumes.length}, ${doubledResumes.length}) |`,
        `| approved | ${figures.approved} |`,
        `| resumed (engine got the verdict) | ${figures.resumed} |`,
        `| consumed | ${figures.consumed} |`,
        `| flows that gave up (a step kept failing for 60 s) | ${figures.unfinished} |`,
        '',
        '| killed (SIGKILL) | at | healthy again after |',
        '|---|---|---|',
        ...figures.faults.map(
          (f) => `| ${f.killed} | t+${f.atSec} s | ${f.healthyAgainMs === null ? 'not within 60 s' : `${(f.healthyAgainMs / 1000).toFixed(1)} s`} |`,
        ),
        '',
        '| a create in flight on a killed decisions replica (two replicas, SIGKILL of one) | value |',
        '|---|---|',
        `| creates in flight at the kill (held on one run's lock, in both replicas) | ${failover.inFlight} |`,
        `| held by the killed replica (resent by the gateway when it fell silent) | ${failover.resentOnSilence} |`,
        `| answered 2xx | ${failover.answered} |`,
        `| last answer after the kill | ${(failover.slowestAfterKillMs / 1000).toFixed(1)} s |`,
        `| decisions per (run, step) | ${[...new Set(failover.decisionsPerStep)].join(', ')} (${failover.decisionsPerStep.length} steps) |`,
        '',
        JSON.stringify(figures),
        '',
      ].join('\n'),
    );
    for (const f of flows.filter((x) => x.error).slice(0, 10)) say(`unfinished ${f.run}: ${f.error}`);
    const failedOver =
      failover.answered === failover.inFlight && failover.decisionsPerStep.length === failover.inFlight && failover.decisionsPerStep.every((c) => c === 1);
    return figures.lost > 0 || doubled > 0 || resumed.length < approved.length || !failedOver ? 1 : 0;
  } finally {
    for (const s of stops.reverse()) await s().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}
