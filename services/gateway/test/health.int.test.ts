import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';

const SERVICES = ['gateway', 'decisions', 'policies', 'notifier', 'surfaces', 'scheduler'];

describe('GET /health', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ label: 'gwhealth' });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('answers 200 with per-component detail when everything runs, without authentication', async () => {
    const res = await stack.http('GET', '/health');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(res.body).toMatchObject({
      status: 'ok',
      version: '1.0.0',
      components: {
        postgres: { ok: true, latencyMs: expect.any(Number) },
        nats: { ok: true, latencyMs: expect.any(Number) },
      },
    });
    expect(res.body.components.postgres).not.toHaveProperty('error');
    expect(res.body.components.nats).not.toHaveProperty('error');
    expect(Object.keys(res.body.services).sort()).toEqual([...SERVICES].sort());
    for (const name of SERVICES) {
      expect({ name, ...res.body.services[name] }).toEqual({ name, ok: true, instances: 1, latencyMs: expect.any(Number) });
    }
  });

  it('ignores a bad Authorization header (health is public)', async () => {
    const res = await stack.http('GET', '/health', { token: 'garbage' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ok');
  });

  it('answers 503 naming the service that is down, and 200 again once it is back', async () => {
    await stack.stopService('scheduler');

    const down = await waitFor(
      async () => {
        const r = await stack.http('GET', '/health');
        return r.status === 503 ? r : undefined;
      },
      { what: 'health to report 503', timeoutMs: 15_000 },
    );
    expect(down.body.status).toBe('unavailable');
    expect(down.body.services.scheduler).toMatchObject({ ok: false, instances: 0 });
    // only the scheduler is reported down
    for (const name of SERVICES.filter((n) => n !== 'scheduler')) {
      expect({ name, ok: down.body.services[name].ok, instances: down.body.services[name].instances }).toEqual({ name, ok: true, instances: 1 });
    }
    expect(down.body.components).toMatchObject({ postgres: { ok: true }, nats: { ok: true } });

    await stack.startService('scheduler');
    const up = await waitFor(
      async () => {
        const r = await stack.http('GET', '/health');
        return r.status === 200 ? r : undefined;
      },
      { what: 'health to report 200 again', timeoutMs: 15_000 },
    );
    expect(up.body.status).toBe('ok');
    expect(up.body.services.scheduler).toMatchObject({ ok: true, instances: 1 });
  });

  it('counts replicas of a service', async () => {
    const extra = await stack.startService('surfaces');
    try {
      const res = await waitFor(
        async () => {
          const r = await stack.http('GET', '/health');
          return r.body?.services?.surfaces?.instances === 2 ? r : undefined;
        },
        { what: 'two surfaces instances', timeoutMs: 15_000 },
      );
      expect(res.status).toBe(200);
      expect(res.body.services.surfaces).toMatchObject({ ok: true, instances: 2 });
    } finally {
      await extra.stop();
    }
  });
});
