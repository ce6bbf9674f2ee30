/**
 * The one retry delay of the tree (deliveries, event redeliveries): exponential from
 * `baseMs`, capped at `maxMs`, with "equal jitter" (half fixed, half random) so retries
 * of many failures spread out instead of arriving together. Attempt 1 is the first retry.
 */
export function backoffDelayMs(attempt: number, opts: { baseMs: number; maxMs: number; jitter?: boolean; random?: () => number }): number {
  const exp = Math.min(opts.maxMs, opts.baseMs * 2 ** Math.max(0, Math.min(attempt - 1, 52)));
  if (opts.jitter === false) return exp;
  const r = (opts.random ?? Math.random)();
  return Math.round(exp / 2 + r * (exp / 2));
}
