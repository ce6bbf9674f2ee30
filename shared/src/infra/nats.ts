import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { waitForPort } from './ports';

export interface LocalNats {
  url: string;
  port: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

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
export async function startNatsServer(opts: { storeDir: string; port?: number; log?: (line: string) => void }): Promise<LocalNats> {
  const bin = ensureNatsServer(opts.log);
  mkdirSync(opts.storeDir, { recursive: true });
  const child = spawn(bin, ['-js', '-a', '127.0.0.1', '-p', String(opts.port ?? -1), '-sd', opts.storeDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
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
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}
