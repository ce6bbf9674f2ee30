import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { natsAuthorizationConfig, type NatsUser } from '../bus/permissions';
import { SERVICE_NAMES, type ServiceName } from '../subjects';
import { waitForPort } from './ports';

/** One NATS user per service, plus `admin` for operators' tools and tests. */
export type NatsUsers = Record<ServiceName, NatsUser> & { admin: NatsUser };

/** Fresh random credentials for every service and for admin. */
export function generateNatsUsers(): NatsUsers {
  const users = { admin: { user: 'admin', password: randomBytes(24).toString('base64url') } } as NatsUsers;
  for (const name of SERVICE_NAMES) users[name] = { user: name, password: randomBytes(24).toString('base64url') };
  return users;
}

export interface LocalNats {
  /** The server's address, without credentials. */
  url: string;
  port: number;
  process: ChildProcess;
  /** The users it accepts, when it was started with authorization. */
  users?: NatsUsers;
  stop(): Promise<void>;
}

/**
 * The Go collector's target (`GOGC`) an embedded nats-server runs with, unless `GOGC` is
 * set: a collection once the heap has grown 400% over what the last one left, not 100%.
 * nats-server's live heap is small (10–20 MB under the bench's load), so at Go's default
 * it collected every 1–3 s; each collection's marking ran for 6–125 ms on up to half the cores
 * and stopped the server for up to 7 ms, and the requests and events passing through it
 * waited (docs/history/performance-rounds.md, fifteenth round). At 400 it collects about a fifth as often
 * and its heap stays well under 100 MB. The compose file and the NATS chart's values set
 * the same.
 */
export const NATS_GOGC = '400';

/**
 * The Go processors (`GOMAXPROCS`) an embedded nats-server runs with, unless `GOMAXPROCS`
 * is set: one. The embedded server shares the machine's cores with the six services and
 * PostgreSQL, where each message it passes readied a goroutine on another OS thread and
 * woke that thread (`futexwakeup` 12% of its CPU profile under the bench's load, the
 * scheduler's search for work 14%). With one processor the goroutines take turns on one
 * thread: 25% less of its CPU a cycle and 20% fewer wake-ups of the system a cycle at
 * 100 cycles a second (docs/history/performance-rounds.md, twenty-third round). A server with cores of
 * its own (compose, the chart) keeps Go's default.
 */
export const NATS_GOMAXPROCS = '1';

/** Finds nats-server on PATH or in the sbin folders Debian installs it to. */
export function findNatsServer(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/usr/bin', '/usr/local/bin'];
  for (const d of dirs) {
    if (!d) continue;
    const p = join(d, 'nats-server');
    if (existsSync(p)) return p;
  }
  return undefined;
}

/**
 * Returns the nats-server binary, installing Debian's package when running as root on
 * Debian; otherwise explains how to install it.
 */
export function ensureNatsServer(log: (line: string) => void = () => undefined): string {
  const found = findNatsServer();
  if (found) return found;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = existsSync('/usr/bin/apt-get');
  if (isRoot && hasApt) {
    log('nats-server not found: installing the Debian package nats-server');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    let r = spawnSync('apt-get', ['install', '-y', '-qq', 'nats-server'], { stdio: 'inherit', env });
    if (r.status !== 0) {
      spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
      r = spawnSync('apt-get', ['install', '-y', '-qq', 'nats-server'], { stdio: 'inherit', env });
    }
    const after = findNatsServer();
    if (after) return after;
  }
  throw new Error(
    'nats-server is not installed. Install it (Debian/Ubuntu: `sudo apt-get install nats-server`; ' +
      'elsewhere: https://docs.nats.io/running-a-nats-service/introduction/installation) or set NATS_URL.',
  );
}

/**
 * Starts `nats-server -js` on loopback with its store in `storeDir`. Without a port the
 * server picks its own (`-p -1`) and we read it from its log: choosing a "free" port first
 * and binding it later races with other test files doing the same, and a server that
 * failed to bind would be mistaken for the other file's server on that port.
 */
export async function startNatsServer(opts: {
  storeDir: string;
  port?: number;
  log?: (line: string) => void;
  users?: NatsUsers;
  configFile?: string;
  /** A member of a JetStream cluster: its name, its route port and the other members' route ports. */
  cluster?: { name: string; serverName: string; port: number; routes: number[] };
  /** nats-server's HTTP monitoring (`/varz`: messages in and out) on this loopback port (the bench counts messages with it). */
  monitorPort?: number;
}): Promise<LocalNats> {
  const bin = ensureNatsServer(opts.log);
  mkdirSync(opts.storeDir, { recursive: true });
  const monitor = opts.monitorPort === undefined ? [] : ['-m', String(opts.monitorPort)];
  let args = ['-js', '-a', '127.0.0.1', '-p', String(opts.port ?? -1), '-sd', opts.storeDir, ...monitor];
  if (opts.users || opts.cluster) {
    // With users, a configuration file: each service's user and its permissions (and the
    // passwords) are not for the process list.
    const file = opts.configFile ?? join(dirname(opts.storeDir), `${opts.storeDir.split('/').pop()}-server.conf`);
    const c = opts.cluster;
    const conf = [
      'host: "127.0.0.1"',
      `port: ${opts.port ?? -1}`,
      ...(c
        ? [
            `server_name: ${JSON.stringify(c.serverName)}`,
            `cluster { name: ${JSON.stringify(c.name)}, listen: "127.0.0.1:${c.port}", routes: [${c.routes.map((p) => JSON.stringify(`nats-route://127.0.0.1:${p}`)).join(', ')}] }`,
          ]
        : []),
      `jetstream { store_dir: ${JSON.stringify(opts.storeDir)} }`,
      ...(opts.users ? [natsAuthorizationConfig(opts.users)] : []),
    ].join('\n');
    writeFileSync(file, conf, { mode: 0o600 });
    args = ['-c', file, ...monitor];
  }
  const child = spawn(bin, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { GOGC: NATS_GOGC, GOMAXPROCS: NATS_GOMAXPROCS, ...process.env },
  });
  let output = '';
  let onOutput: (() => void) | undefined;
  const collect = (b: Buffer) => {
    output = (output + b.toString()).slice(-8000);
    onOutput?.();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let port: number;
  try {
    port = await Promise.race([
      new Promise<number>((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`nats-server did not become ready in 20 s:\n${output}`)), 20_000);
        onOutput = () => {
          const m = /Listening for client connections on [^\s]*:(\d+)/.exec(output);
          if (m && /Server is ready/.test(output)) {
            clearTimeout(deadline);
            resolve(Number(m[1]));
          }
        };
        onOutput();
      }),
      exited.then(() => {
        throw new Error(`nats-server exited at start:\n${output}`);
      }),
    ]);
    onOutput = undefined;
    await waitForPort(port, 5000);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    process: child,
    users: opts.users,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}
