import { Counter, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The process's Prometheus registry. Every service registers its metrics here; a service
 * exposes it on METRICS_PORT (the gateway also at /metrics).
 */
export const metricsRegistry = new Registry();
let defaultsCollected = false;

/** Node process metrics (CPU, memory, event loop lag, GC), once per process. */
export function collectProcessMetrics(labels: Record<string, string> = {}): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  metricsRegistry.setDefaultLabels(labels);
  collectDefaultMetrics({ register: metricsRegistry, prefix: 'approvals_' });
}

/** Events a consumer could not handle and parked in the dead-letter stream, by durable and reason. */
export const deadLettersTotal = new Counter({
  name: 'approvals_dead_letters_total',
  help: 'Events parked in the dead-letter stream (DEADLETTER) instead of being handled',
  labelNames: ['durable', 'reason'] as const,
  registers: [metricsRegistry],
});
