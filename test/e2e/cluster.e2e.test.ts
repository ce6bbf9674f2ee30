import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import jwt from 'jsonwebtoken';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { freePort } from '@approvals/shared/infra';
import { createTestDatabase, storedEvents, waitFor, type TestDatabase } from '@approvals/shared/testing';
import { startRecorder } from '../helpers/third-parties';

/**
 * `npm run cluster` under load and faults: a 3-node NATS cluster (streams at 3 replicas),
 * two replicas of every service, the gateways behind the balancer. A steady mixed load
 * (create, vote, verify, consume; decisions left to expire) runs while one replica of each
 * service is killed with SIGKILL and one NATS node is stopped. Then: every acknowledged
 * decision is there, none resolved or consumed twice, each resume and each timer went out
 * once per event id, and both replicas of every service did some of the work (their metrics).
 */
const ROOT = join(__dirname, '..', '..');
const CLUSTER = join(ROOT, 'deploy', 'local', 'cluster.js');

interface ClusterInfo {
  baseUrl: string;
  nats: Array<{ name: string; url: string; pid: number }>;
  replicas: Array<{ key: string; service: string; pid: number; metricsPort: number }>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the cluster under load and faults', () => {
  let db: TestDatabase;
  let proc: ChildProcess;
  let output = '';
  let dataDir: string;
  let base: string;
  let info: ClusterInfo;
  let engine: Awaited<ReturnType<typeof startRecorder>>;
  let pg: Client;

  beforeAll(async () => {
    db = await createTestDatabase('cluster');
    engine = await startRecorder();
    dataDir = mkdtempSync(join(tmpdir(), 'approvals-cluster-'));
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      APPROVALS_DATA_DIR: dataDir,
      PORT: String(port),
      DATABASE_URL: db.url,
      LOG_LEVEL: 'error',
      INNGEST_URL: engine.url,
      INNGEST_EVENT_KEY: 'cluster-key',
      SCHEDULER_POLL_MS: '200',
      DELIVERY_POLL_MS: '100',
      DELIVERY_RETRY_BASE_MS: '200',
      DELIVERY_LEASE_SEC: '3',
    };
    for (const k of ['NATS_URL', 'AUTH_JWT_SECRET', 'PUBLIC_BASE_URL', 'NODE_ENV']) delete env[k];
    proc = spawn(process.execPath, [CLUSTER], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const collect = (b: Buffer) => (output = (output + b.toString()).slice(-20_000));
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    const file = join(dataDir, 'cluster', 'cluster.json');
    // Up in about 20 s on an idle host; much longer beside the rest of the suite. A cluster
    // that exits or never comes up fails at once with what it printed.
    const deadline = Date.now() + 240_000;
    while (!existsSync(file)) {
      if (proc.exitCode !== null) throw new Error(`the cluster exited with ${proc.exitCode}:\n${output}`);
      if (Date.now() > deadline) throw new Error(`the cluster did not come up in 240 s:\n${output}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    info = JSON.parse(readFileSync(file, 'utf8')) as ClusterInfo;
    base = `http://127.0.0.1:${port}`;
    pg = new Client({ connectionString: db.url });
    await pg.connect();
  }, 270_000);

  afterAll(async () => {
    await pg?.end().catch(() => undefined);
    if (proc?.pid) {
      try {
        process.kill(-proc.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
      // The bound's timer must not keep jest's worker alive once the cluster has exited.
      await Promise.race([new Promise((r) => proc.once('exit', r)), new Promise((r) => setTimeout(r, 30_000).unref())]);
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await engine?.stop();
    await db?.drop().catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  const secret = () => (JSON.parse(readFileSync(join(dataDir, 'secrets.json'), 'utf8')) as { AUTH_JWT_SECRET: string }).AUTH_JWT_SECRET;

  /**
   * The events on the stream (the outbox deletes what it has published: the stream is the
   * record), on a NATS node that was never stopped, as the cluster's admin.
   */
  const eventsOnStream = async (): Promise<Array<{ subject: string; data: Record<string, unknown> }>> => {
    const { admin } = JSON.parse(readFileSync(join(dataDir, 'nats-auth.json'), 'utf8')) as { admin: { user: string; password: string } };
    const nc = await connect({ servers: info.nats[0]!.url, user: admin.user, pass: admin.password });
    try {
      return (await storedEvents(await jetstreamManager(nc))).map((m) => ({ subject: m.subject, data: m.envelope.data }));
    } finally {
      await nc.close();
    }
  };
  /** How many events of `subject` there are per value of `data[key]`. */
  const countBy = (events: Array<{ subject: string; data: Record<string, unknown> }>, subject: string, key: string) => {
    const counts = new Map<string, number>();
    for (const e of events) if (e.subject === subject) counts.set(String(e.data[key]), (counts.get(String(e.data[key])) ?? 0) + 1);
    return counts;
  };

  /**
   * One HTTP call on a connection of its own (as many independent clients would make, so
   * the balancer spreads them); a transport failure (a connection cut by a killed replica)
   * is answered as status 0.
   */
  /** Every answer's status while `recording` (0: the connection failed). */
  const answers: number[] = [];
  let recording = false;
  const call = (method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> =>
    new Promise<{ status: number; body: any }>((resolve) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = httpRequest(
        `${base}${path}`,
        {
          method,
          agent: false,
          timeout: 15_000,
          headers: {
            authorization: `Bearer ${token}`,
            ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            try {
              resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
            } catch {
              resolve({ status: res.statusCode ?? 0, body: text });
            }
          });
          res.on('error', () => resolve({ status: 0, body: undefined }));
        },
      );
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve({ status: 0, body: undefined }));
      req.end(payload);
    }).then((r) => {
      if (recording) answers.push(r.status);
      return r;
    });
  /** Retries what a fault interrupted (5xx, cut connection): every step here is idempotent. */
  const until = async (what: string, attempt: () => Promise<{ status: number; body: any }>, ok: (s: number, b: any) => boolean) => {
    for (let i = 0; i < 40; i++) {
      const r = await attempt();
      if (ok(r.status, r.body)) return r;
      if (r.status !== 0 && r.status < 500) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
      await sleep(250);
    }
    throw new Error(`${what}: no answer after 40 tries`);
  };

  it('loses nothing and doubles nothing when a replica of each service is killed and a NATS node stops', async () => {
    const org = `org_cluster_${Date.now().toString(36)}`;
    const admin = jwt.sign({ sub: 'usr_admin', email: 'admin@cluster.test', org, role: 'admin' }, secret(), { expiresIn: 3600 });
    const reviewer = jwt.sign({ sub: 'usr_rev', email: 'rev@cluster.test', org }, secret(), { expiresIn: 3600 });
    const key = (
      await until(
        'api key',
        () => call('POST', '/v1/api-keys/', admin, { name: 'load', roles: ['decisions:write', 'policies:write'] }),
        (s) => s === 201,
      )
    ).body.key as string;

    const acknowledged = new Set<string>();
    const consumed = new Set<string>();
    const expiring = new Set<string>();
    let running = true;
    let seq = 0;

    // With an expiry, so the scheduler's replicas arm and disarm every cycle's timers (a
    // decision that waits indefinitely never reaches the scheduler).
    const cycle = async () => {
      const runId = `run-${++seq}`;
      const created = await until(
        'create',
        () =>
          call('POST', '/v1/worker/decisions', key, {
            externalRunId: runId,
            stepRef: 's',
            approvers: ['rev@cluster.test'],
            engine: 'engineA',
            factsHash: 'a'.repeat(64),
            timeoutSec: 3600,
          }),
        (s) => s === 201 || s === 200,
      );
      const id = created.body.decisionId as string;
      acknowledged.add(id);
      await until(
        'vote',
        () => call('POST', `/v1/decisions/${id}/decide`, reviewer, { decision: 'approve' }),
        (s, b) => s === 200 || (s === 409 && b?.error === 'already_voted'),
      );
      await until(
        'verify',
        () => call('GET', `/v1/worker/decisions/${id}/verify?factsHash=${'a'.repeat(64)}`, key),
        (s, b) => s === 200 && b.valid === true,
      );
      await until(
        'consume',
        () => call('POST', `/v1/worker/decisions/${id}/consume`, key, { consumer: 'load', factsHash: 'a'.repeat(64) }),
        (s) => s === 200,
      );
      consumed.add(id);
      // The session's policy list: policies answers it, asking decisions for the usage.
      await until(
        'policies',
        () => call('GET', '/v1/policies/', admin),
        (s) => s === 200,
      );
      // The surfaces service hears of decisions only for orgs with a chat installation: its
      // replicas' work here is the integration view (answered or refused, it is counted).
      await call('GET', '/v1/integrations/chatA', admin);
    };
    const expiry = async () => {
      const runId = `exp-${++seq}`;
      const created = await until(
        'create expiring',
        () =>
          call('POST', '/v1/worker/decisions', key, {
            externalRunId: runId,
            stepRef: 's',
            approvers: ['nobody@cluster.test'],
            engine: 'engineA',
            timeoutSec: 2,
          }),
        (s) => s === 201 || s === 200,
      );
      acknowledged.add(created.body.decisionId);
      expiring.add(created.body.decisionId);
    };
    const loops = [
      ...Array.from({ length: 4 }, async () => {
        while (running) await cycle();
      }),
      (async () => {
        while (running) {
          await expiry();
          await sleep(300);
        }
      })(),
    ];

    await sleep(8000);
    // No replica exited on its own under the load (cluster.json follows restarts).
    const now = JSON.parse(readFileSync(join(dataDir, 'cluster', 'cluster.json'), 'utf8')) as ClusterInfo;
    const restarted = now.replicas.filter((r) => info.replicas.find((x) => x.key === r.key)?.pid !== r.pid).map((r) => r.key);
    if (restarted.length) throw new Error(`replicas exited on their own under load: ${restarted.join(', ')}\n${output}`);
    // One replica of every service, killed outright.
    for (const r of info.replicas.filter((x) => x.key.endsWith('-1'))) process.kill(r.pid, 'SIGKILL');
    await sleep(4000);
    // One NATS node stops (the streams keep a quorum of 2 of 3).
    process.kill(info.nats[2]!.pid, 'SIGTERM');
    await sleep(16_000);
    // On a loaded host a killed replica can take longer to come back: the load goes on
    // until every replica answers ready again, and a few seconds more so each gets work.
    const ready = (port: number) =>
      new Promise<boolean>((resolve) =>
        httpRequest(`http://127.0.0.1:${port}/readyz`, { agent: false, timeout: 2000 }, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        })
          .on('error', () => resolve(false))
          .on('timeout', function (this: { destroy(): void }) {
            this.destroy();
          })
          .end(),
      );
    await waitFor(async () => (await Promise.all(info.replicas.map((r) => ready(r.metricsPort)))).every(Boolean), {
      timeoutMs: 60_000,
      intervalMs: 500,
      what: 'every replica ready again',
    });
    await sleep(4000);
    running = false;
    await Promise.all(loops);
    expect(acknowledged.size).toBeGreaterThan(40);

    const ids = [...acknowledged];
    // Everything settles: consumed ones resumed, expiring ones expired and resumed.
    await waitFor(
      async () => {
        const r = await pg.query(`SELECT count(*)::int AS n FROM decisions.decisions WHERE id = ANY($1) AND status IN ('APPROVED', 'EXPIRED')`, [ids]);
        const resumed = new Set(engine.requests.map((q) => q.body?.data?.decisionId));
        return r.rows[0].n === ids.length && ids.every((id) => resumed.has(id));
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'every decision resolved and resumed' },
    );

    // Every acknowledged decision is there, resolved once.
    const rows = (await pg.query(`SELECT id, status, consumed_at FROM decisions.decisions WHERE id = ANY($1)`, [ids])).rows as Array<{
      id: string;
      status: string;
      consumed_at: Date | null;
    }>;
    expect(rows).toHaveLength(ids.length);
    for (const r of rows) expect([r.id, r.status]).toEqual([r.id, expiring.has(r.id) ? 'EXPIRED' : 'APPROVED']);
    for (const id of consumed) expect(rows.find((r) => r.id === id)!.consumed_at).not.toBeNull();
    const twice = await pg.query(
      `SELECT decision_id, count(*)::int AS n FROM decisions.timeline WHERE decision_id = ANY($1) AND type IN ('resolved', 'expired') GROUP BY decision_id HAVING count(*) > 1`,
      [ids],
    );
    expect(twice.rows).toEqual([]);
    // One resolved event per decision and one consumed per consume, on the stream.
    const events = await eventsOnStream();
    const resolvedEvents = countBy(events, 'evt.decision.resolved', 'decisionId');
    const consumedEvents = countBy(events, 'evt.decision.consumed', 'decisionId');
    expect(ids.map((id) => [id, resolvedEvents.get(id)])).toEqual(ids.map((id) => [id, 1]));
    expect([...consumed].map((id) => [id, consumedEvents.get(id)])).toEqual([...consumed].map((id) => [id, 1]));
    expect(ids.filter((id) => !consumed.has(id) && consumedEvents.has(id))).toEqual([]);

    // Each resume went out for one event id per decision (a resend after a crash carries the same id: the engine dedupes on it).
    const resumeIds = new Map<string, Set<string>>();
    for (const q of engine.requests) {
      const id = q.body?.data?.decisionId as string | undefined;
      if (!id) continue;
      resumeIds.set(id, (resumeIds.get(id) ?? new Set()).add(q.body.id));
    }
    for (const id of ids) expect([id, resumeIds.get(id)?.size]).toEqual([id, 1]);

    // Each expiry timer fired once, with one timer event.
    const timers = await pg.query(`SELECT t.id, t.ref, t.fired_at FROM scheduler.timers t WHERE t.kind = 'expire' AND t.ref = ANY($1)`, [[...expiring]]);
    expect(timers.rows).toHaveLength(expiring.size);
    const timerEvents = countBy(events, 'evt.timer.expire_due', 'timerId');
    for (const t of timers.rows as Array<{ id: string; ref: string; fired_at: Date | null }>)
      expect([t.ref, t.fired_at !== null, timerEvents.get(t.id)]).toEqual([t.ref, true, 1]);

    // Both replicas of every service did some of the work (the killed ones after their restart too).
    const metric = async (port: number, name: string, match: string) => {
      const text = (await new Promise<string>((resolve, reject) =>
        httpRequest(`http://127.0.0.1:${port}/metrics`, { agent: false }, (res) => {
          let t = '';
          res.on('data', (c: Buffer) => (t += c.toString()));
          res.on('end', () => resolve(t));
        })
          .on('error', reject)
          .end(),
      )) as string;
      return text
        .split('\n')
        .filter((l) => l.startsWith(name) && l.includes(match))
        .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    };
    const work: Record<string, [string, string]> = {
      gateway: ['approvals_http_requests_total', 'route="/v1/worker/decisions"'],
      decisions: ['approvals_bus_requests_total', 'service="decisions"'],
      policies: ['approvals_bus_requests_total', 'subject="svc.policies.list"'],
      notifier: ['approvals_events_handled_total', 'durable="notifier-decision-created"'],
      surfaces: ['approvals_bus_requests_total', 'subject="svc.integrations.chatA.get"'],
      scheduler: ['approvals_events_handled_total', 'durable="scheduler-decision-timers"'],
    };
    const seen: Record<string, number> = {};
    for (const r of info.replicas) seen[r.key] = await metric(r.metricsPort, ...work[r.service]!);
    const idle = info.replicas.filter((r) => !(seen[r.key]! > 0)).map((r) => r.key);
    if (idle.length)
      process.stderr.write(
        `work per replica: ${JSON.stringify(seen)}\n${output
          .split('\n')
          .filter((l) => /exited|error|warn/i.test(l))
          .slice(-40)
          .join('\n')}\n`,
      );
    expect(idle).toEqual([]);
  }, 240_000);

  it('a rolling restart of every replica under load (SIGTERM, one at a time) loses nothing and answers no 5xx', async () => {
    const org = `org_rolling_${Date.now().toString(36)}`;
    const admin = jwt.sign({ sub: 'usr_admin', email: 'admin@rolling.test', org, role: 'admin' }, secret(), { expiresIn: 3600 });
    const reviewer = jwt.sign({ sub: 'usr_rev', email: 'rev@rolling.test', org }, secret(), { expiresIn: 3600 });
    const key = (
      await until(
        'api key',
        () => call('POST', '/v1/api-keys/', admin, { name: 'load', roles: ['decisions:write'] }),
        (s) => s === 201,
      )
    ).body.key as string;
    const file = join(dataDir, 'cluster', 'cluster.json');
    const current = () => JSON.parse(readFileSync(file, 'utf8')) as ClusterInfo;
    const ready = async (port: number) =>
      new Promise<boolean>((resolve) =>
        httpRequest(`http://127.0.0.1:${port}/readyz`, { agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        })
          .on('error', () => resolve(false))
          .end(),
      );
    // Every replica up and ready before the restarts begin (test one killed some).
    await waitFor(async () => (await Promise.all(current().replicas.map((r) => ready(r.metricsPort)))).every(Boolean), {
      timeoutMs: 60_000,
      what: 'every replica ready',
    });

    const made = new Set<string>();
    const done = new Set<string>();
    let running = true;
    let n = 0;
    recording = true;
    const loops = Array.from({ length: 3 }, async () => {
      while (running) {
        const runId = `roll-${++n}`;
        const created = await until(
          'create',
          () => call('POST', '/v1/worker/decisions', key, { externalRunId: runId, stepRef: 's', approvers: ['rev@rolling.test'], factsHash: 'b'.repeat(64) }),
          (s) => s === 201 || s === 200,
        );
        const id = created.body.decisionId as string;
        made.add(id);
        await until(
          'vote',
          () => call('POST', `/v1/decisions/${id}/decide`, reviewer, { decision: 'approve' }),
          (s, b) => s === 200 || (s === 409 && b?.error === 'already_voted'),
        );
        await until(
          'consume',
          () => call('POST', `/v1/worker/decisions/${id}/consume`, key, { consumer: 'roll', factsHash: 'b'.repeat(64) }),
          (s) => s === 200,
        );
        done.add(id);
      }
    });

    await sleep(2000);
    for (const before of current().replicas) {
      process.kill(before.pid, 'SIGTERM');
      // Back (a new process) and ready before the next one goes.
      await waitFor(
        async () => {
          const now = current().replicas.find((r) => r.key === before.key)!;
          return now.pid !== before.pid && (await ready(now.metricsPort));
        },
        { timeoutMs: 60_000, intervalMs: 200, what: `${before.key} to restart` },
      );
    }
    await sleep(2000);
    running = false;
    await Promise.all(loops);
    recording = false;

    expect(made.size).toBeGreaterThan(20);
    expect(done.size).toBe(made.size);
    // No 5xx and no cut connection at any point: draining replicas finished what they held.
    const failures = answers.filter((s) => s === 0 || s >= 500);
    expect({ answers: answers.length, failures }).toEqual({ answers: answers.length, failures: [] });
    const rows = await pg.query(`SELECT count(*)::int AS n FROM decisions.decisions WHERE id = ANY($1) AND status = 'APPROVED' AND consumed_at IS NOT NULL`, [
      [...made],
    ]);
    expect(rows.rows[0].n).toBe(made.size);
  }, 240_000);
});
