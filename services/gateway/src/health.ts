import { Svcm } from '@nats-io/services';
import { SERVICE_NAMES, type Bus, type Knex } from '@approvals/shared';

interface Component {
  ok: boolean;
  latencyMs?: number;
  instances?: number;
  error?: string;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value?: T; error?: string }> {
  const t0 = Date.now();
  try {
    const value = await fn();
    return { ms: Date.now() - t0, value };
  } catch (err) {
    return { ms: Date.now() - t0, error: (err as Error).message };
  }
}

/**
 * 200 only when Postgres, NATS and every service answer. Services are found with the
 * NATS services discovery ping (`$SRV.PING.<name>`), counting live instances.
 */
export function createHealthCheck(deps: { db: Knex; bus: Bus; pingTimeoutMs: number }) {
  const svcm = new Svcm(deps.bus.nc);
  return async () => {
    const [pg, nats, ...pings] = await Promise.all([
      timed(() => deps.db.raw('select 1')),
      timed(() => deps.bus.nc.rtt()),
      ...SERVICE_NAMES.map((name) =>
        timed(async () => {
          const client = svcm.client({ strategy: 'timer', maxWait: deps.pingTimeoutMs });
          let n = 0;
          for await (const _ of await client.ping(name)) n++;
          return n;
        }),
      ),
    ]);
    const services: Record<string, Component> = {};
    SERVICE_NAMES.forEach((name, i) => {
      const r = pings[i];
      const instances = (r.value as number | undefined) ?? 0;
      services[name] = { ok: instances > 0, instances, latencyMs: r.ms, ...(r.error ? { error: r.error } : {}) };
    });
    const components = {
      postgres: { ok: !pg.error, latencyMs: pg.ms, ...(pg.error ? { error: pg.error } : {}) },
      nats: { ok: !nats.error, latencyMs: nats.ms, ...(nats.error ? { error: nats.error } : {}) },
    };
    const ok = components.postgres.ok && components.nats.ok && Object.values(services).every((s) => s.ok);
    return { status: ok ? 200 : 503, body: { status: ok ? 'ok' : 'unavailable', version: '1.0.0', components, services } };
  };
}
