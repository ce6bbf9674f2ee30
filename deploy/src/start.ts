import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, SERVICE_NAMES, type ServiceName } from '@approvals/shared';
import { launchServices, waitHealthy } from './processes';
import { DATA_DIR, localJwtSecret, localReceiptKeys, localSecretsKey, portFree, provideInfra, RUNTIME_FILE, writeRuntime } from './dev-env';
import { jetstreamReplicasFromEnv, natsAdminAuthFromEnv, provisionWhenReady } from './provision';

const COLORS = ['\x1b[36m', '\x1b[33m', '\x1b[35m', '\x1b[32m', '\x1b[34m', '\x1b[31m'];
const RESET = '\x1b[0m';
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const useColor = process.stdout.isTTY;
/** How long a service's line waits before it is shown, so a Ctrl-C that arrived with it is seen first. */
const SIGNAL_GRACE_MS = 100;

function say(line: string) {
  process.stdout.write(`[start] ${line}\n`);
}

/** A pino line at error or fatal level (or not JSON: a crash's own output). */
function isError(raw: string): boolean {
  try {
    return Number((JSON.parse(raw) as { level?: unknown }).level) >= 50;
  } catch {
    return !raw.trim().startsWith('{') && raw.trim() !== '';
  }
}

/** Pino JSON → one readable line, prefixed by the service name. */
function formatLine(name: string, color: string, raw: string): string {
  const prefix = useColor ? `${color}[${name.padEnd(9)}]${RESET}` : `[${name.padEnd(9)}]`;
  try {
    const o = JSON.parse(raw) as Record<string, unknown>;
    const { level, time, msg, pid: _p, hostname: _h, name: _n, svc: _s, ...rest } = o;
    const t = new Date(Number(time)).toISOString().slice(11, 23);
    const extra = Object.keys(rest).length ? ` ${JSON.stringify(rest).slice(0, 400)}` : '';
    return `${prefix} ${t} ${LEVELS[Number(level)] ?? level} ${msg ?? ''}${extra}`;
  } catch {
    return `${prefix} ${raw}`;
  }
}

export async function main(): Promise<void> {
  // A closed terminal or pipe (EPIPE/EIO on write) must not abort the shutdown half way
  // and leave nats-server or PostgreSQL running: output is best effort.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  const port = Number(process.env.PORT ?? 8080);
  if (!(await portFree(port))) {
    throw new Error(`port ${port} is already in use (another \`npm start\`?): stop that, or choose another port with PORT=…`);
  }
  const infra = await provideInfra(say);
  // JetStream as the services need it, made by the admin user before they start (they may
  // not make it): the embedded server's admin, or NATS_ADMIN_* for the server in NATS_URL.
  const admin = infra.natsUsers?.admin;
  try {
    await provisionWhenReady({
      url: infra.natsUrl,
      auth: admin ? { user: admin.user, pass: admin.password } : natsAdminAuthFromEnv(),
      replicas: jetstreamReplicasFromEnv(),
      log: createLogger('provision', process.env.LOG_LEVEL === 'silent' ? 'silent' : 'warn'),
    });
  } catch (err) {
    await infra.stop();
    throw err;
  }
  say('JetStream provisioned (streams, bucket, durable consumers)');
  const baseUrl = process.env.PUBLIC_BASE_URL ?? `http://localhost:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: infra.databaseUrl,
    NATS_URL: infra.natsUrl,
    AUTH_JWT_SECRET: localJwtSecret(),
    SECRETS_KEY: localSecretsKey(),
    ...localReceiptKeys(),
    PORT: String(port),
    PUBLIC_BASE_URL: baseUrl,
  };
  let shuttingDown = false;
  // One metrics port each (METRICS_PORT + the service's index), never six on one port.
  const metricsBase = process.env.METRICS_PORT ? Number(process.env.METRICS_PORT) : undefined;
  // While stopping, what the services say is kept out of the terminal: a Ctrl-C reaches
  // PostgreSQL and nats-server at the same moment as the services, so each one's closing
  // connections would print screens of expected warnings and stack traces. They go to a
  // file instead; an error (level 50+) is still shown.
  const whileStopping: string[] = [];
  const procs = launchServices({
    env,
    envOf: metricsBase === undefined ? undefined : (name) => ({ METRICS_PORT: String(metricsBase + SERVICE_NAMES.indexOf(name as ServiceName)) }),
    natsUsers: infra.natsUsers,
    restart: true,
    onLine: (name, idx, line) => {
      // Each line is shown a moment after it arrives: the Ctrl-C and what PostgreSQL's
      // reaction to it makes a service say can reach this process in either order, and a
      // line that turns out to be part of the stop belongs in the file. Timers of one delay
      // fire in the order they were made, so the lines keep their order.
      setTimeout(() => {
        if (shuttingDown && !isError(line)) {
          whileStopping.push(`[${name}] ${line}`);
          return;
        }
        process.stdout.write(`${formatLine(name, COLORS[idx % COLORS.length], line)}\n`);
      }, SIGNAL_GRACE_MS);
    },
    onRestart: (name, reason, delay) => say(`${name} exited (${reason}); restarting in ${delay} ms`),
  });

  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    // A Ctrl-C reaches PostgreSQL too: from here on it stops on purpose.
    infra.release();
    say(`${signal}: stopping services…`);
    await procs.stop();
    say('stopping infrastructure…');
    await infra.stop();
    rmSync(RUNTIME_FILE, { force: true });
    await new Promise((resolve) => setTimeout(resolve, SIGNAL_GRACE_MS)); // the last lines, still held
    const stopLog = join(DATA_DIR, 'stop.log');
    try {
      writeFileSync(stopLog, whileStopping.length ? `${whileStopping.join('\n')}\n` : '');
      say(whileStopping.length ? `stopped (what the services said while stopping: ${stopLog})` : 'stopped');
    } catch {
      say('stopped');
    }
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGHUP', () => void shutdown('SIGHUP')); // the terminal was closed

  const health = await waitHealthy(`http://127.0.0.1:${port}`, 120_000, () => shuttingDown);
  if (!health.ok && !shuttingDown) say(`not healthy after 120 s; last health answer: ${health.last}`);
  writeRuntime({ baseUrl, databaseUrl: infra.databaseUrl, natsUrl: infra.natsUrl, pid: process.pid });
  say('');
  say(`Approvals is up: ${baseUrl}`);
  say(`  health  ${baseUrl}/health`);
  say(`  API     ${baseUrl}/docs  (OpenAPI: ${baseUrl}/openapi.json)`);
  say(`  first admin: npm run admin -- bootstrap --org <org id> --email <you@example.com>`);
  say('Ctrl-C stops everything.');
}
