import { chmodSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { join } from 'node:path';
import { SERVICE_NAMES, createLogger } from '@approvals/shared';
import { ensureDatabase, freePort, startEmbeddedPostgres, startNatsServer, type LocalNats } from '@approvals/shared/infra';
import { startBalancer } from './balancer';
import { DATA_DIR, localJwtSecret, localNatsUsers, localReceiptKeys, localSecretsKey, portFree, RUNTIME_FILE, writeRuntime } from './dev-env';
import { launchServices, waitHealthy } from './processes';
import { provisionWhenReady } from './provision';

/**
 * `npm run cluster`: the scaled-out topology on one machine. A 3-node NATS cluster with
 * JetStream (streams and buckets at 3 replicas), PostgreSQL (embedded unless
 * DATABASE_URL), every service twice, and the two gateways behind a round-robin
 * balancer on PORT. Each replica serves its metrics and probes on a port of its own;
 * `.data/cluster/cluster.json` lists them all (pids, ports), for operators and tests.
 */

export const CLUSTER_DIR = join(DATA_DIR, 'cluster');
export const CLUSTER_FILE = join(CLUSTER_DIR, 'cluster.json');

export interface ClusterInfo {
  baseUrl: string;
  databaseUrl: string;
  nats: Array<{ name: string; url: string; pid: number; clientPort: number; routePort: number }>;
  replicas: Array<{ key: string; service: string; pid: number; metricsPort: number; port?: number }>;
  launcherPid: number;
}

function say(line: string) {
  process.stdout.write(`[cluster] ${line}\n`);
}

export async function main(): Promise<void> {
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  const port = Number(process.env.PORT ?? 8080);
  const replicas = Number(process.env.CLUSTER_REPLICAS ?? 2);
  if (!(await portFree(port)))
    throw new Error(`port ${port} is already in use (\`npm start\` or another cluster?): stop that, or choose another port with PORT=…`);
  mkdirSync(CLUSTER_DIR, { recursive: true });
  if (typeof process.getuid === 'function' && process.getuid() === 0) {
    // As root, PostgreSQL runs as `postgres`, which must be able to enter the folders.
    for (const d of [DATA_DIR, CLUSTER_DIR]) chmodSync(d, (statSync(d).mode & 0o7777) | 0o011);
  }
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  };
  let shuttingDown = false;
  try {
    let databaseUrl = process.env.DATABASE_URL;
    if (!databaseUrl) {
      const pgPort = (await portFree(54339)) ? 54339 : await freePort();
      say(`starting embedded PostgreSQL on 127.0.0.1:${pgPort} (data in ${join(CLUSTER_DIR, 'pg')})`);
      const pg = await startEmbeddedPostgres({ dataDir: join(CLUSTER_DIR, 'pg'), port: pgPort, persistent: true, callerHandlesSignals: true });
      stops.push(() => pg.stop());
      databaseUrl = await ensureDatabase(pg.url, 'approvals');
    }

    const users = localNatsUsers();
    const clientPorts = [await freePort(), await freePort(), await freePort()];
    const routePorts = [await freePort(), await freePort(), await freePort()];
    say(`starting a 3-node NATS cluster with JetStream on ${clientPorts.join(', ')}`);
    const servers: LocalNats[] = await Promise.all(
      [0, 1, 2].map((i) =>
        startNatsServer({
          storeDir: join(CLUSTER_DIR, `nats-${i + 1}`),
          port: clientPorts[i],
          users,
          configFile: join(CLUSTER_DIR, `nats-${i + 1}.conf`),
          cluster: { name: 'approvals', serverName: `n${i + 1}`, port: routePorts[i]!, routes: routePorts.filter((_, j) => j !== i) },
        }),
      ),
    );
    for (const s of servers) stops.push(() => s.stop());
    const natsUrl = servers.map((s) => s.url).join(',');
    // The streams, the bucket and the durables at 3 replicas, made by the admin user once the
    // cluster's JetStream answers, before the twelve processes start (they may not make them).
    await provisionWhenReady({
      url: natsUrl,
      auth: { user: users.admin.user, pass: users.admin.password },
      replicas: 3,
      log: createLogger('cluster', 'silent'),
      timeoutMs: 60_000,
    });

    const gatewayPorts: number[] = [];
    const metricsPorts = new Map<string, number>();
    for (const name of SERVICE_NAMES) for (let r = 1; r <= replicas; r++) metricsPorts.set(`${name}-${r}`, await freePort());
    for (let r = 1; r <= replicas; r++) gatewayPorts.push(await freePort());
    const baseUrl = process.env.PUBLIC_BASE_URL ?? `http://localhost:${port}`;
    say(`starting ${replicas} replicas of each service`);
    // Set once the cluster is up; from then on cluster.json follows restarts.
    // eslint-disable-next-line prefer-const -- read by the restart handler below before it is set
    let describe: (() => ClusterInfo) | undefined;
    const procs = launchServices({
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        NATS_URL: natsUrl,
        JETSTREAM_REPLICAS: '3',
        AUTH_JWT_SECRET: localJwtSecret(),
        SECRETS_KEY: localSecretsKey(),
        ...localReceiptKeys(),
        PUBLIC_BASE_URL: baseUrl,
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
      },
      natsUsers: users,
      replicas,
      restart: process.env.CLUSTER_RESTART !== 'false',
      envOf: (name, r) => ({
        METRICS_PORT: String(metricsPorts.get(`${name}-${r}`)),
        // A gateway told to stop reports not ready for a second first: the balancer stops
        // sending it connections before it closes its port.
        ...(name === 'gateway' ? { PORT: String(gatewayPorts[r - 1]), SHUTDOWN_DELAY_MS: process.env.SHUTDOWN_DELAY_MS ?? '1000' } : {}),
      }),
      onLine: (key, _i, line) => process.stdout.write(`[${key.padEnd(11)}] ${line}\n`),
      onRestart: (key, reason, delay) => say(`${key} exited (${reason}); restarting in ${delay} ms`),
      // A replica restarted: cluster.json gets its new pid.
      onStart: () => {
        if (describe) writeFileSync(CLUSTER_FILE, JSON.stringify(describe(), null, 2));
      },
    });
    stops.push(() => procs.stop());

    const readyz = (metricsPort: number) =>
      new Promise<boolean>((resolve) => {
        const req = httpGet({ host: '127.0.0.1', port: metricsPort, path: '/readyz', agent: false, timeout: 1000 }, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        });
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(false));
      });
    const balancer = await startBalancer({
      port,
      backends: () => gatewayPorts,
      ready: (backend) => readyz(metricsPorts.get(`gateway-${gatewayPorts.indexOf(backend) + 1}`)!),
    });
    stops.push(() => balancer.close());

    const shutdown = async (signal: string) => {
      if (shuttingDown) return;
      shuttingDown = true;
      say(`${signal}: stopping…`);
      await stopAll();
      rmSync(CLUSTER_FILE, { force: true });
      rmSync(RUNTIME_FILE, { force: true });
      say('stopped');
      process.exit(0);
    };
    process.on('SIGINT', () => void shutdown('SIGINT'));
    process.on('SIGTERM', () => void shutdown('SIGTERM'));
    process.on('SIGHUP', () => void shutdown('SIGHUP'));

    const health = await waitHealthy(`http://127.0.0.1:${port}`, 180_000, () => shuttingDown);
    if (!health.ok && !shuttingDown) say(`not healthy after 180 s; last health answer: ${health.last}`);
    describe = (): ClusterInfo => ({
      baseUrl,
      databaseUrl,
      nats: servers.map((s, i) => ({ name: `n${i + 1}`, url: s.url, pid: s.process.pid!, clientPort: clientPorts[i]!, routePort: routePorts[i]! })),
      replicas: [...procs.children].map(([key, child]) => ({
        key,
        service: key.replace(/-\d+$/, ''),
        pid: child.pid!,
        metricsPort: metricsPorts.get(replicas === 1 ? `${key}-1` : key)!,
        ...(key.startsWith('gateway') ? { port: gatewayPorts[Number(key.split('-').pop()) - 1] } : {}),
      })),
      launcherPid: process.pid,
    });
    writeFileSync(CLUSTER_FILE, JSON.stringify(describe(), null, 2));
    writeRuntime({ baseUrl, databaseUrl, natsUrl, pid: process.pid });
    say('');
    say(`Approvals cluster is up: ${baseUrl}`);
    say(`  ${servers.length} NATS servers (JetStream, 3 replicas), ${replicas} replicas of each service, gateways behind the balancer on ${port}`);
    say(`  metrics: each replica on its own port (${CLUSTER_FILE})`);
    say('Ctrl-C stops everything.');
  } catch (err) {
    await stopAll();
    throw err;
  }
}
