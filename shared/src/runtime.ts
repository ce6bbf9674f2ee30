import type { Knex } from 'knex';
import { Bus } from './bus/bus';
import { EventConsumer, type ConsumerOptions } from './bus/consumer';
import { JetStreamNotProvisioned, provisionJetStream, requireProvisioned } from './bus/jetstream';
import { OutboxRelay, type HeldEvents } from './bus/outbox';
import { ServiceHost } from './bus/service-host';
import { systemClock, type Clock } from './clock';
import { EchoEndpoints } from './contracts/access';
import { ConfigError, metricsEndpoint, natsAuthFromEnv, poolSettings, type BaseServiceEnv } from './config';
import { createDb, migrate, warmPool, type Migration } from './db';
import { createLogger, type Logger } from './logger';
import { collectProcessMetrics, scrapedGauge, startMetricsServer } from './metrics';
import { startTracing, stopTracing } from './tracing';
import { DURABLE_SUBJECT, STREAM_EVENTS, type ServiceName } from './subjects';

export interface ServiceContext {
  name: ServiceName;
  schema: string;
  db: Knex;
  bus: Bus;
  host: ServiceHost;
  log: Logger;
  clock: Clock;
  /**
   * Registers a durable consumer; consumers start once setup returns. The durable must be
   * one of this service's in DURABLE_SUBJECT, with the subject declared there.
   */
  consume(opts: Omit<ConsumerOptions, 'bus' | 'log'>): void;
  /** With an outbox: publishes events right after the statement that wrote them commits (`HeldEvents`). */
  heldEvents?: HeldEvents;
  /** With an outbox: its relay (for example to set the `companions` of what it publishes). */
  relay?: OutboxRelay;
}

export interface SetupResult {
  /** Runs first on stop (for example: close the HTTP server so no new work arrives). */
  beforeStop?: () => Promise<void>;
  /** Runs after endpoints, consumers and relay have stopped, before bus and db close. */
  afterStop?: () => Promise<void>;
}

/**
 * What every service reads from its environment to run (BaseServiceEnv): database, NATS and
 * its credentials, metrics and probes, pool, JetStream replicas, shutdown delay, log level.
 * A service's own config extends it, so it passes its whole config here.
 */
export type ServiceRuntimeConfig = BaseServiceEnv;

export interface ServiceOptions {
  name: ServiceName;
  version: string;
  /**
   * The service's configuration: startService derives the database, NATS (without
   * credentials it connects anonymously, with a warning, and provisions JetStream itself: a
   * bare nats-server in development), metrics, pool and shutdown settings from it.
   */
  config: ServiceRuntimeConfig;
  schema: string;
  migrations: Migration[];
  /** Default: a logger at the config's LOG_LEVEL. */
  log?: Logger;
  clock?: Clock;
  /** Runs an outbox relay for this schema (services that emit events). */
  outbox?: boolean | { pollMs?: number };
  /** Announces every change made through its (not read-only) endpoints to the caches of its data (bus/invalidation). */
  announcesChanges?: boolean;
  setup(ctx: ServiceContext): Promise<SetupResult | void>;
}

export interface RunningService {
  name: ServiceName;
  ctx: ServiceContext;
  relay?: OutboxRelay;
  /** Where `/metrics` and the probes are served, when METRICS_PORT is set. */
  metricsPort?: number;
  stop(): Promise<void>;
}

/**
 * config → knex on the service's schema → migrations → NATS service → endpoints →
 * consumers → outbox relay. `stop()` is the graceful path: stop taking work, let work
 * in flight finish, then close NATS and the pool.
 */
export async function startService(opts: ServiceOptions): Promise<RunningService> {
  const { config } = opts;
  const log = opts.log ?? createLogger(opts.name, config.LOG_LEVEL);
  const databaseUrl = config.DATABASE_URL;
  const natsUrl = config.NATS_URL;
  const natsAuth = natsAuthFromEnv(config);
  const metricsAt = metricsEndpoint(config);
  const shutdownDelayMs = config.SHUTDOWN_DELAY_MS;
  const clock = opts.clock ?? systemClock;
  // Traces, when the OTEL_* variables ask for them (off by default).
  if (await startTracing(opts.name)) log.info('exporting traces (OpenTelemetry)');
  const db = createDb({ url: databaseUrl, schema: opts.schema, pool: poolSettings(config), log });
  let bus: Bus | undefined;
  try {
    await migrate(db, opts.schema, opts.migrations);
    await warmPool(db);
    const anonymous = !natsAuth && !/^[a-z]+:\/\/[^@/]+@/i.test(natsUrl);
    if (anonymous) {
      log.warn(
        'connecting to NATS without credentials: any client that reaches the server can act as this service (set NATS_USER/NATS_PASSWORD or NATS_CREDS)',
      );
    }
    bus = await Bus.connect({ url: natsUrl, name: opts.name, log, auth: natsAuth });
    // With its own NATS user a service may not make streams or consumers: they are
    // provisioned before it starts, and it stops here if they are not. Anonymous (a bare
    // nats-server in development, where anyone may do anything) it provisions them itself.
    if (anonymous) await provisionJetStream(bus, { log, replicas: config.JETSTREAM_REPLICAS });
    else await requireProvisioned(bus);
    collectProcessMetrics();
    const host = await ServiceHost.create({
      bus,
      name: opts.name,
      version: opts.version,
      log,
      announcesChangesAs: opts.announcesChanges ? opts.name : undefined,
    });
    host.handle(EchoEndpoints[opts.name], async (req) => {
      if (req.delayMs) await new Promise((r) => setTimeout(r, req.delayMs));
      return { message: req.message, instance: host.instanceId };
    });
    const consumerOpts: Omit<ConsumerOptions, 'bus' | 'log'>[] = [];
    // Made before setup, so the stores can hand it the events they publish themselves;
    // its loop starts once the consumers have.
    const relay = opts.outbox
      ? new OutboxRelay({
          db,
          databaseUrl,
          schema: opts.schema,
          bus,
          log,
          pollMs: typeof opts.outbox === 'object' ? opts.outbox.pollMs : undefined,
        })
      : undefined;
    const ctx: ServiceContext = {
      name: opts.name,
      schema: opts.schema,
      db,
      bus,
      host,
      log,
      clock,
      consume: (c) => consumerOpts.push(declared(opts.name, c)),
      heldEvents: relay,
      relay,
    };
    const hooks = (await opts.setup(ctx)) ?? {};
    const consumers = consumerOpts.map((c) => new EventConsumer({ ...c, bus: bus!, log }));
    for (const c of consumers) await c.start();
    await relay?.start();
    // Subscriptions are sent without waiting: a round trip makes sure the server has them,
    // so a request sent (from another connection) once this returns finds a responder.
    await bus.nc.flush();
    let stopping: Promise<void> | undefined;
    registerServiceGauges({ name: opts.name, schema: opts.schema, db, bus, outbox: Boolean(opts.outbox), durables: consumerOpts.map((c) => c.durable) });
    const metrics =
      metricsAt === undefined
        ? undefined
        : await startMetricsServer({
            ...metricsAt,
            // Ready: taking work (not stopping), connected to NATS, and the database answers.
            ready: async () =>
              !stopping &&
              !bus!.nc.isClosed() &&
              !bus!.nc.isDraining() &&
              (await db.raw('SELECT 1').then(
                () => true,
                () => false,
              )),
          });
    if (metrics) log.info({ port: metrics.port, host: metricsAt?.host ?? '127.0.0.1', token: Boolean(metricsAt?.token) }, 'metrics and probes listening');
    log.info({ instance: host.instanceId }, `${opts.name} started`);
    return {
      name: opts.name,
      ctx,
      relay,
      metricsPort: metrics?.port,
      stop: () =>
        (stopping ??= (async () => {
          // Not ready from here on (`/readyz` 503); balancers stop sending new work while
          // this replica still serves, then it stops taking work and finishes what it holds.
          if (shutdownDelayMs) {
            log.info({ delayMs: shutdownDelayMs }, 'stopping: reporting not ready before draining');
            await new Promise((r) => setTimeout(r, shutdownDelayMs));
          }
          await hooks.beforeStop?.();
          await host.stop();
          await Promise.all(consumers.map((c) => c.stop()));
          await relay?.stop();
          await hooks.afterStop?.();
          await bus!.close();
          await db.destroy();
          await metrics?.close();
          log.info(`${opts.name} stopped`);
        })()),
    };
  } catch (err) {
    await bus?.close().catch(() => undefined);
    await db.destroy().catch(() => undefined);
    throw err;
  }
}

/**
 * Gauges read when Prometheus scrapes: the outbox's backlog and the age of its oldest
 * unsent row, each durable's pending and unacknowledged messages and redeliveries, and
 * the database pool.
 */
function registerServiceGauges(s: { name: ServiceName; schema: string; db: Knex; bus: Bus; outbox: boolean; durables: string[] }): void {
  if (s.outbox) {
    // Both outbox gauges from one query per scrape.
    const backlog = perScrape(
      async () =>
        (
          await s.db.raw(`SELECT count(*)::int AS n, coalesce(extract(epoch FROM now() - min(created_at)), 0)::float AS age FROM ?? WHERE sent_at IS NULL`, [
            `${s.schema}.outbox`,
          ])
        ).rows[0] as { n: number; age: number },
    );
    scrapedGauge({
      name: 'approvals_outbox_backlog',
      help: 'Outbox rows not yet published, by schema',
      labelNames: ['schema'] as const,
      read: async () => [{ labels: { schema: s.schema }, value: (await backlog()).n }],
    });
    scrapedGauge({
      name: 'approvals_outbox_lag_seconds',
      help: 'Age of the oldest outbox row not yet published, by schema (0 when none)',
      labelNames: ['schema'] as const,
      read: async () => [{ labels: { schema: s.schema }, value: (await backlog()).age }],
    });
  }
  if (s.durables.length) {
    // The three consumer gauges from one round of consumer infos per scrape.
    const infos = perScrape(async () => {
      const jsm = await s.bus.jsm();
      return Promise.all(s.durables.map(async (d) => ({ d, info: await jsm.consumers.info(STREAM_EVENTS, d) })));
    });
    const gauges = [
      ['approvals_consumer_pending', 'Events not yet delivered to a durable consumer', 'num_pending'],
      ['approvals_consumer_ack_pending', 'Events delivered to a durable consumer and not yet acknowledged', 'num_ack_pending'],
      ['approvals_consumer_redelivered', 'Events of a durable consumer delivered more than once and still unacknowledged', 'num_redelivered'],
    ] as const;
    for (const [name, help, field] of gauges) {
      scrapedGauge({
        name,
        help,
        labelNames: ['durable'] as const,
        read: async () => (await infos()).map(({ d, info }) => ({ labels: { durable: d }, value: info[field] })),
      });
    }
  }
  scrapedGauge({
    name: 'approvals_db_pool_connections',
    help: 'Database pool connections by state (used, free, pending: requests waiting for one)',
    labelNames: ['service', 'state'] as const,
    read: async () => {
      const pool = (s.db.client as { pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number } }).pool;
      if (!pool) return [];
      return [
        { labels: { service: s.name, state: 'used' }, value: pool.numUsed() },
        { labels: { service: s.name, state: 'free' }, value: pool.numFree() },
        { labels: { service: s.name, state: 'pending' }, value: pool.numPendingAcquires() },
      ];
    },
  });
}

/** `read`, shared by the gauges of one scrape (they are collected together, well within a second). */
function perScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (!last || Date.now() - last.at > 1000) last = { at: Date.now(), value: read() };
    return last.value;
  };
}

/**
 * A consumer a service registers: one of its own durables (`<service>-…`), with the subject
 * DURABLE_SUBJECT declares for it, the one the provisioning step made it with. Anything else
 * is a mistake in the code, stopped at start rather than left to a permission error.
 */
function declared<C extends { durable: string; filterSubject: string }>(name: ServiceName, c: C): C {
  const subject = (DURABLE_SUBJECT as Record<string, string>)[c.durable];
  if (subject === undefined || !c.durable.startsWith(`${name}-`)) {
    throw new Error(`${name} consumes ${c.durable}, which is not one of its durables in DURABLE_SUBJECT (shared/src/subjects.ts)`);
  }
  if (subject !== c.filterSubject) {
    throw new Error(`${name} consumes ${c.durable} with ${c.filterSubject}, declared in DURABLE_SUBJECT with ${subject}`);
  }
  return c;
}

/**
 * Process entry: start, then stop gracefully on SIGTERM/SIGINT and exit 0. A bad
 * configuration exits 1 with a message naming the variable. Signal handlers are
 * installed before starting: endpoints go live during start, so a SIGTERM that arrives
 * then must still let the requests in flight finish instead of killing the process.
 */
export function runMain(name: string, start: () => Promise<{ stop(): Promise<void> }>): void {
  const log = createLogger(name);
  let shuttingDown = false;
  const starting = start();
  const shutdown = (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      log.error('graceful shutdown timed out');
      process.exit(1);
    }, 25_000);
    force.unref();
    starting
      .then((svc) => svc.stop())
      .then(() => stopTracing())
      .then(
        () => process.exit(0),
        (err) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // A closed terminal: stop as cleanly as on Ctrl-C instead of dying mid-request.
  process.on('SIGHUP', () => shutdown('SIGHUP'));
  starting.catch((err) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`${name}: ${err.message}\n`);
    } else if (err instanceof JetStreamNotProvisioned) {
      log.fatal({ err }, err.message);
    } else {
      log.fatal({ err }, 'failed to start');
    }
    process.exit(1);
  });
}
