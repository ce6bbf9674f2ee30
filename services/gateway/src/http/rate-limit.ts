/**
 * Token buckets in memory, per gateway replica: a replica-local limit is a guard
 * against runaway clients, not a billing meter (quotas live in the decisions service).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly ratePerMs: number;

  constructor(
    private readonly perMinute: number,
    private readonly burst: number = perMinute,
  ) {
    this.ratePerMs = perMinute / 60_000;
  }

  /** Takes one token; returns 0 when allowed, else the seconds to wait. */
  take(key: string, now = Date.now()): number {
    let b = this.buckets.get(key);
    if (!b) {
      b = { tokens: this.burst, at: now };
      this.buckets.set(key, b);
      if (this.buckets.size > 100_000) this.sweep(now);
    }
    b.tokens = Math.min(this.burst, b.tokens + (now - b.at) * this.ratePerMs);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.ratePerMs / 1000));
  }

  private sweep(now: number): void {
    for (const [k, b] of this.buckets) if (b.tokens + (now - b.at) * this.ratePerMs >= this.burst) this.buckets.delete(k);
  }
}
