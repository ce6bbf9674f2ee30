import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SERVICE_NAMES } from '@approvals/shared';
import { localJwtSecret, provideInfra, ROOT, RUNTIME_FILE, writeRuntime } from './dev-env';

const COLORS = ['\x1b[36m', '\x1b[33m', '\x1b[35m', '\x1b[32m', '\x1b[34m', '\x1b[31m'];
const RESET = '\x1b[0m';
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const useColor = process.stdout.isTTY;

function say(line: string) {
  process.stdout.write(`[start] ${line}\n`);
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
  const infra = await provideInfra(say);
  const port = Number(process.env.PORT ?? 8080);
  const baseUrl = process.env.PUBLIC_BASE_URL ?? `http://localhost:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: infra.databaseUrl,
    NATS_URL: infra.natsUrl,
    AUTH_JWT_SECRET: localJwtSecret(),
    PORT: String(port),
    PUBLIC_BASE_URL: baseUrl,
  };
  const children = new Map<string, ChildProcess>();
  let shuttingDown = false;

  const launch = (name: string, idx: number, attempt = 0) => {
    const child = spawn(process.execPath, [join(ROOT, 'services', name, 'dist', 'main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.set(name, child);
    const color = COLORS[idx % COLORS.length];
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (l) => process.stdout.write(`${formatLine(name, color, l)}\n`));
    }
    const startedAt = Date.now();
    child.on('exit', (code, signal) => {
      if (shuttingDown) return;
      // Supervise: restart with backoff; a service that stayed up a minute starts its count again.
      const next = Date.now() - startedAt > 60_000 ? 0 : attempt + 1;
      const delay = Math.min(30_000, 500 * 2 ** next);
      say(`${name} exited (${signal ?? code}); restarting in ${delay} ms`);
      setTimeout(() => !shuttingDown && launch(name, idx, next), delay);
    });
  };
  SERVICE_NAMES.forEach((name, i) => launch(name, i));

  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    say(`${signal}: stopping services…`);
    await Promise.all(
      [...children.values()].map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            const t = setTimeout(() => c.kill('SIGKILL'), 20_000);
            c.once('exit', () => {
              clearTimeout(t);
              resolve();
            });
            c.kill('SIGTERM');
          }),
      ),
    );
    say('stopping infrastructure…');
    await infra.stop();
    rmSync(RUNTIME_FILE, { force: true });
    say('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  const deadline = Date.now() + 120_000;
  const healthUrl = `http://127.0.0.1:${port}/health`;
  let last = '';
  while (!shuttingDown) {
    try {
      const res = await fetch(healthUrl);
      last = await res.text();
      if (res.status === 200) break;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) {
      say(`not healthy after 120 s; last health answer: ${last}`);
      break;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  writeRuntime({ baseUrl, databaseUrl: infra.databaseUrl, natsUrl: infra.natsUrl, pid: process.pid });
  say('');
  say(`Approvals is up: ${baseUrl}`);
  say(`  health  ${baseUrl}/health`);
  say(`  API     ${baseUrl}/docs  (OpenAPI: ${baseUrl}/openapi.json)`);
  say(`  first admin: npm run admin -- bootstrap --org <org id> --email <you@example.com>`);
  say('Ctrl-C stops everything.');
}
