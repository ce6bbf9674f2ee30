import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { listenOn } from './infra/ports';

/**
 * The process's Prometheus registry. Every service registers its metrics here; a service
 * exposes it on METRICS_PORT (the gateway also at /metrics). Service-level metrics carry
 * a `service` label, so the processes of one test (or one pod running two services)
 * stay apart.
 */
export const metricsRegistry = new Registry();
let defaultsCollected = false;

/**
 * Node process metrics (CPU, memory, event loop lag, GC), once per process. The event
 * loop is sampled every 100 ms, not prom-client's default 10 ms: a timer 100 times a
 * second was about a third of an idle service's CPU (six services: ~20 ms of CPU a
 * second doing nothing). A stall is measured whenever a sample falls due during it, so
 * long or frequent stalls show as before; a short, rare one is seen less often.
 */
export function collectProcessMetrics(): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  collectDefaultMetrics({ register: metricsRegistry, prefix: 'approvals_', eventLoopMonitoringPrecision: 100 });
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Events a consumer could not handle and parked in the dead-letter stream, by durable and reason. */
export const deadLettersTotal = new Counter({
  name: 'approvals_dead_letters_total',
  help: 'Events parked in the dead-letter stream (DEADLETTER) instead of being handled',
  labelNames: ['durable', 'reason'] as const,
  registers: [metricsRegistry],
});

/** HTTP requests answered by the gateway, per route pattern (not per URL: bounded labels). */
export const httpRequestsTotal = new Counter({
  name: 'approvals_http_requests_total',
  help: 'HTTP requests answered, by route pattern, method and status class',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [metricsRegistry],
});
export const httpRequestSeconds = new Histogram({
  name: 'approvals_http_request_duration_seconds',
  help: 'HTTP request latency, by route pattern and method',
  labelNames: ['route', 'method'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [metricsRegistry],
});

/** Requests a service answered over the bus, per subject. */
export const busRequestsTotal = new Counter({
  name: 'approvals_bus_requests_total',
  help: 'Bus requests answered, by service, subject and outcome (ok, or the error code)',
  labelNames: ['service', 'subject', 'outcome'] as const,
  registers: [metricsRegistry],
});
export const busRequestSeconds = new Histogram({
  name: 'approvals_bus_request_duration_seconds',
  help: 'Time to answer a bus request, by service and subject',
  labelNames: ['service', 'subject'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [metricsRegistry],
});

/** Idempotent bus requests sent a second time, by why (Bus.send). */
export const busResendsTotal = new Counter({
  name: 'approvals_bus_resends_total',
  help: 'Idempotent bus requests sent a second time, by subject and reason (silent: the replica holding it stopped answering and saying it works on it; no_responders: no replica subscribed; timeout: an unwatched wait ran out)',
  labelNames: ['subject', 'reason'] as const,
  registers: [metricsRegistry],
});

/** Events handled by a durable consumer (ok, retried, parked). */
/**
 * A durable consumer's pull that the server refused or stopped answering (a 409 limit,
 * two missed heartbeats, the consumer or stream gone): nats.js then waits for missed
 * heartbeats before pulling again, so events wait seconds. By durable and notification.
 */
export const consumerStallsTotal = new Counter({
  name: 'approvals_consumer_stalls_total',
  help: 'Pulls of a durable consumer refused or unanswered by the server, by durable and kind (exceeded_limits, heartbeats_missed, consumer_deleted, consumer_not_found, stream_not_found; pull_lost: unanswered past its expiry and sent again)',
  labelNames: ['durable', 'kind'] as const,
  registers: [metricsRegistry],
});

export const eventsHandledTotal = new Counter({
  name: 'approvals_events_handled_total',
  help: 'Events handled by a durable consumer, by durable and outcome (ok, retry, dead_letter)',
  labelNames: ['durable', 'outcome'] as const,
  registers: [metricsRegistry],
});

/** Outbox rows published to JetStream. */
export const outboxPublishedTotal = new Counter({
  name: 'approvals_outbox_published_total',
  help: 'Outbox rows published to JetStream, by schema',
  labelNames: ['schema'] as const,
  registers: [metricsRegistry],
});

/** Notifier deliveries by channel and outcome, and each attempt. */
export const deliveriesTotal = new Counter({
  name: 'approvals_deliveries_total',
  help: 'Delivery attempts by channel and outcome (sent, skipped, retry, failed)',
  labelNames: ['channel', 'outcome'] as const,
  registers: [metricsRegistry],
});

/** How late timers fired (fired − due). */
export const timerFireLagSeconds = new Histogram({
  name: 'approvals_timer_fire_lag_seconds',
  help: 'Delay between a timer being due and the scheduler firing it, by kind',
  labelNames: ['kind'] as const,
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
  registers: [metricsRegistry],
});

/**
 * A gauge read at scrape time. `read` answers the current values (label sets and
 * values); a failing read leaves the gauge empty for that scrape rather than failing it.
 */
export function scrapedGauge<L extends string>(opts: {
  name: string;
  help: string;
  labelNames: readonly L[];
  read: () => Promise<Array<{ labels: Record<L, string>; value: number }>>;
}): Gauge<L> {
  const existing = metricsRegistry.getSingleMetric(opts.name) as (Gauge<L> & { reads?: Array<typeof opts.read> }) | undefined;
  if (existing?.reads) {
    // Several services in one process (tests): each adds its reader to the same gauge.
    existing.reads.push(opts.read);
    return existing;
  }
  const reads = [opts.read];
  const gauge = new Gauge<L>({
    name: opts.name,
    help: opts.help,
    labelNames: opts.labelNames,
    registers: [metricsRegistry],
    async collect() {
      this.reset();
      for (const read of reads) {
        try {
          for (const v of await read()) this.set(v.labels as never, v.value);
        } catch {
          /* unavailable for this scrape (database or NATS down): the gap shows it */
        }
      }
    },
  }) as Gauge<L> & { reads?: Array<typeof opts.read> };
  gauge.reads = reads;
  return gauge;
}

/** Where a service serves `/metrics` and its probes (METRICS_PORT, METRICS_HOST, METRICS_TOKEN). */
export interface MetricsEndpoint {
  /** 0: any free port. */
  port: number;
  /** Interface to listen on (default 127.0.0.1: this host only). */
  host?: string;
  /** When set, `/metrics` needs `Authorization: Bearer <token>`. */
  token?: string;
}

/**
 * Whether a request may read `/metrics`: always without a token, else only with
 * `Authorization: Bearer <token>` (compared in constant time). The one check of every port
 * that serves metrics: the gateway's own and each METRICS_PORT.
 */
export function metricsTokenAccepted(authorization: string | undefined, token: string | undefined): boolean {
  if (!token) return true;
  const given = Buffer.from(authorization ?? '');
  const wanted = Buffer.from(`Bearer ${token}`);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

/** The answer to a `/metrics` request without the token. */
export const METRICS_UNAUTHORIZED = { error: 'unauthorized', message: '/metrics needs the metrics token (METRICS_TOKEN)' } as const;

/**
 * The metrics endpoint of a service without HTTP of its own: `GET /metrics` (behind the
 * token when one is set), and the probes `GET /livez` (the process answers) and
 * `GET /readyz` (200 when `ready()` says so: connected to NATS and the database, not
 * draining). The probes stay open: they say only "ok" or "not ready", and the kubelet and
 * Docker's health check call them without credentials. It listens on 127.0.0.1 unless
 * told otherwise, so nothing off the host reaches it by default.
 */
export async function startMetricsServer(
  opts: MetricsEndpoint & { ready: () => Promise<boolean> },
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
        return;
      }
      if (path === '/metrics') {
        if (!metricsTokenAccepted(req.headers.authorization, opts.token)) {
          res.writeHead(401, { 'content-type': 'application/json; charset=utf-8', 'www-authenticate': 'Bearer' }).end(JSON.stringify(METRICS_UNAUTHORIZED));
          return;
        }
        const body = await metricsRegistry.metrics();
        res.writeHead(200, { 'content-type': metricsRegistry.contentType }).end(body);
      } else if (path === '/livez') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      } else if (path === '/readyz') {
        const ok = await opts.ready().catch(() => false);
        res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ready\n' : 'not ready\n');
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      }
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  const port = await listenOn(server, opts.port, opts.host ?? '127.0.0.1');
  return {
    server,
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
