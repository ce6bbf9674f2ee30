import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@approvals/shared/testing';

/**
 * The local launchers (`launchServices`: npm start, the bench, chaos, the cluster) start
 * each service in a session of its own, preloaded with `exit-with-launcher.js`. A Ctrl-C
 * then reaches only the launcher, which stops the services; if the launcher dies without
 * doing so, each service must stop itself, through its own graceful shutdown (SIGTERM).
 */
const ROOT = join(__dirname, '..', '..');
const GUARD = join(ROOT, 'deploy', 'dist', 'exit-with-launcher.js');

/** Exists and has not exited (a zombie waits only for its parent to collect it). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('a service started by a launcher', () => {
  it('runs in a session of its own, and stops itself with SIGTERM once its launcher is killed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'approvals-launcher-'));
    dirs.push(dir);
    const pidFile = join(dir, 'pid');
    const stopped = join(dir, 'stopped');
    // A stand-in service: writes its pid, lives until a signal, and records a SIGTERM.
    const service = `
      const fs = require('node:fs');
      process.on('SIGTERM', () => { fs.writeFileSync(${JSON.stringify(stopped)}, 'SIGTERM'); process.exit(0); });
      setInterval(() => undefined, 60_000);
      fs.writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));`;
    // A launcher that starts it the way launchServices does, then waits.
    const launcherCode = `
      require('node:child_process').spawn(process.execPath, ['--require', ${JSON.stringify(GUARD)}, '-e', ${JSON.stringify(service)}], { detached: true, stdio: 'ignore' });
      setInterval(() => undefined, 60_000);`;
    const launcher = spawn(process.execPath, ['-e', launcherCode], { stdio: 'ignore' });
    try {
      await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').length > 0, { timeoutMs: 20_000, what: 'the service to start' });
      const pid = Number(readFileSync(pidFile, 'utf8'));
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [, ppid, , session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      expect({ ppid: Number(ppid), session: Number(session) }).toEqual({ ppid: launcher.pid, session: pid });

      // The guard checks once a second: with its launcher alive it leaves the service be.
      await new Promise((r) => setTimeout(r, 2500));
      expect({ running: running(pid), stopped: existsSync(stopped) }).toEqual({ running: true, stopped: false });

      launcher.kill('SIGKILL');
      await waitFor(() => existsSync(stopped) && !running(pid), { timeoutMs: 10_000, what: 'the service to stop itself' });
      expect(readFileSync(stopped, 'utf8')).toBe('SIGTERM');
    } finally {
      launcher.kill('SIGKILL');
      if (existsSync(pidFile)) {
        try {
          process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
        } catch {
          /* stopped, as it should */
        }
      }
    }
  }, 60_000);
});
