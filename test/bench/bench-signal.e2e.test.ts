import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '@approvals/shared/testing';

/**
 * `npm run bench` stopped by a signal sent to it alone (kill, a CI job's timeout), not to
 * its process group as a terminal's Ctrl-C is: nothing it started may keep running.
 */
const BENCH = join(__dirname, '..', '..', 'deploy', 'local', 'bench.js');

/** Every live descendant of `root`, from /proc. */
function descendantsOf(root: number): Array<{ pid: number; argv: string }> {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone since the listing
    }
  }
  const out: Array<{ pid: number; argv: string }> = [];
  const walk = (pid: number) => {
    for (const [child, parent] of parentOf) {
      if (parent !== pid) continue;
      try {
        out.push({ pid: child, argv: readFileSync(`/proc/${child}/cmdline`, 'utf8').replace(/\0/g, ' ') });
      } catch {
        continue;
      }
      walk(child);
    }
  };
  walk(root);
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // An exited process not reaped yet is a zombie: gone for this purpose.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('npm run bench, stopped by a signal', () => {
  it('stops PostgreSQL, nats-server and every service it started when SIGTERM reaches it alone', async () => {
    const bench = spawn(process.execPath, [BENCH], {
      env: { ...process.env, BENCH_CREATE: '20', BENCH_CYCLES: '20', BENCH_RATES: '0', BENCH_WARM: '10' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    bench.stdout!.on('data', (b: Buffer) => (output += b.toString()));
    bench.stderr!.on('data', (b: Buffer) => (output += b.toString()));
    const exited = new Promise<number | null>((resolve) => bench.on('exit', (code) => resolve(code)));
    let started: Array<{ pid: number; argv: string }> = [];
    try {
      // The whole system is up once the bench measures it at rest.
      await waitFor(() => output.includes('at rest'), { timeoutMs: 120_000, intervalMs: 200 });
      started = descendantsOf(bench.pid!);
      const kinds = (pattern: RegExp) => started.filter((p) => pattern.test(p.argv)).length;
      expect(kinds(/nats-server/)).toBe(1);
      expect(kinds(/\/postgres -D /)).toBe(1);
      expect(kinds(/services\/\w+\/dist\/main\.js/)).toBe(6);

      bench.kill('SIGTERM');
      await exited;
      await waitFor(() => started.every((p) => !alive(p.pid)), { timeoutMs: 30_000, intervalMs: 200 });
      expect(started.filter((p) => alive(p.pid))).toEqual([]);
    } finally {
      if (bench.exitCode === null) bench.kill('SIGKILL');
      for (const p of [...descendantsOf(bench.pid!), ...started]) if (alive(p.pid)) process.kill(p.pid, 'SIGKILL');
    }
  }, 180_000);
});
