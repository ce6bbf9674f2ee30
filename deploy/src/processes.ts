import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SERVICE_NAMES, type ServiceName } from '@approvals/shared';
import type { NatsUsers } from '@approvals/shared/infra';
import { ROOT } from './dev-env';
import { RESTART_COUNT_RESET_MS, restartDelayMs } from './supervise';

export interface ServiceProcesses {
  children: Map<string, ChildProcess>;
  /** SIGTERM every service, SIGKILL after the grace period; resolves when all have exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Node flags every service process runs with (here and in the image's entry point,
 * `deploy/docker/Dockerfile`).
 *
 * `--no-memory-reducer`: V8's memory reducer shrinks the heap of a process that has gone
 * quiet with full mark-compacts (`Mark-Compact (reduce)` in `--trace-gc`). In a service
 * that is idle between bursts (policies, surfaces and the scheduler under a steady decision
 * load) each took 36–109 ms of a core on its main thread and 19–53 ms of incremental
 * marking before it, at moments unrelated to the load; on a shared host the requests in
 * flight then waited (docs/history/performance-rounds.md, fifteenth round). A server keeps the heap its
 * load grew instead; the ordinary collections still run as it allocates.
 *
 * `--min-semi-space-size=16`: the young generation starts at its largest default size
 * (16 MB a semi-space) instead of 1 MB, sized afterwards from what its scavenges see:
 * under load the services still scavenged every few megabytes allocated (the gateway 168
 * times in a traced bench run, 52 with the flag). A scavenge costs mostly what survives it
 * (the requests in flight), not the space, so a third of the scavenges did the same work
 * in half the time, and the gateway, decisions and notifier took 15–23% less CPU a cycle
 * relative to PostgreSQL's (docs/history/performance-rounds.md, eighteenth round), for up to 32 MB
 * more of each process's memory (the two semi-spaces, resident as they are used; 1 MB more
 * in an idle process). (`--max-semi-space-size` alone, tried before, changed nothing: it
 * only raises a limit.)
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--no-memory-reducer', '--min-semi-space-size=16'];

/**
 * Runs the six services as separate processes (`services/<name>/dist/main.js`) with the
 * given environment. With `restart`, a service that exits is started again with backoff
 * (a service that stayed up a minute starts its count again).
 */
export function launchServices(opts: {
  env: NodeJS.ProcessEnv;
  /** Each service's own NATS user (NATS_USER / NATS_PASSWORD in its environment). */
  natsUsers?: NatsUsers;
  onLine?: (service: string, index: number, line: string) => void;
  restart?: boolean;
  onRestart?: (service: string, reason: string, delayMs: number) => void;
  /** More Node flags before the script (after SERVICE_NODE_FLAGS), e.g. `--cpu-prof` (the bench's profiles). */
  nodeArgs?: (service: string) => string[];
  /** Processes per service (default 1). With more, `children` is keyed `<name>-<n>` (1-based). */
  replicas?: number;
  /** More environment for one replica (e.g. its own PORT and METRICS_PORT). */
  envOf?: (service: string, replica: number) => NodeJS.ProcessEnv;
  /** Called each time a process starts (the first time and after each restart). */
  onStart?: (key: string, child: ChildProcess) => void;
  /** Only these services (default: all six), e.g. one started again with other settings (the bench's latency phase). */
  only?: readonly string[];
}): ServiceProcesses {
  const replicas = Math.max(1, opts.replicas ?? 1);
  const children = new Map<string, ChildProcess>();
  let stopping = false;

  const launch = (name: string, idx: number, replica: number, attempt = 0) => {
    const user = opts.natsUsers?.[name as ServiceName];
    const key = replicas === 1 ? name : `${name}-${replica}`;
    const env = { ...opts.env, ...(user ? { NATS_USER: user.user, NATS_PASSWORD: user.password } : {}), ...(opts.envOf?.(name, replica) ?? {}) };
    const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...(opts.nodeArgs?.(name) ?? []), join(ROOT, 'services', name, 'dist', 'main.js')], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.set(key, child);
    opts.onStart?.(key, child);
    for (const stream of [child.stdout!, child.stderr!]) {
      const rl = createInterface({ input: stream });
      if (opts.onLine) rl.on('line', (l) => opts.onLine!(key, idx, l));
    }
    const startedAt = Date.now();
    child.on('exit', (code, signal) => {
      if (stopping || !opts.restart) return;
      const next = Date.now() - startedAt > RESTART_COUNT_RESET_MS ? 0 : attempt + 1;
      const delay = restartDelayMs(next);
      opts.onRestart?.(key, String(signal ?? code), delay);
      setTimeout(() => !stopping && launch(name, idx, replica, next), delay);
    });
  };
  SERVICE_NAMES.forEach((name, i) => {
    if (opts.only && !opts.only.includes(name)) return;
    for (let r = 1; r <= replicas; r++) launch(name, i, r);
  });

  return {
    children,
    stop: async (graceMs = 20_000) => {
      stopping = true;
      await Promise.all(
        [...children.values()].map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.exitCode !== null || c.signalCode !== null) return resolve();
              const t = setTimeout(() => c.kill('SIGKILL'), graceMs);
              c.once('exit', () => {
                clearTimeout(t);
                resolve();
              });
              c.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}

/** Polls `GET /health` until 200 or the deadline; returns the last answer. */
export async function waitHealthy(baseUrl: string, timeoutMs: number, isCancelled: () => boolean = () => false): Promise<{ ok: boolean; last: string }> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (!isCancelled()) {
    try {
      const res = await fetch(`${baseUrl}/health`);
      last = await res.text();
      if (res.status === 200) return { ok: true, last };
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return { ok: false, last };
}
