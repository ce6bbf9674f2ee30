import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { Client } from 'pg';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Bus, DURABLE_SUBJECT, SERVICE_NAMES, STREAM_EVENTS, collectProcessMetrics, createLogger, metricsRegistry } from '@approvals/shared';
import { createTestDatabase, startTestNats } from '@approvals/shared/testing';
import { NATS_GOGC } from '@approvals/shared/infra';
import { manifests, renderYaml } from '../../deploy/src/kubernetes';
import { SERVICE_NODE_FLAGS } from '../../deploy/src/processes';

/**
 * The deployment artifacts are checked, not just shipped: the Kubernetes manifests are
 * valid against the Kubernetes schemas and cover every service with probes; compose
 * runs every service twice on a 3-node NATS cluster; the alert rules and the dashboard
 * only use metrics the code exports; the image's migrate entry migrates and provisions
 * JetStream as the NATS admin user.
 */
const ROOT = join(__dirname, '..', '..');
const K8S = join(ROOT, 'deploy', 'kubernetes');
const read = (...p: string[]) => readFileSync(join(ROOT, ...p), 'utf8');

const MODELS: Record<string, new (o: any) => { validate(): void }> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
};

function docsOf(file: string): Array<Record<string, any>> {
  return parseAllDocuments(readFileSync(join(K8S, file), 'utf8'))
    .map((d) => d.toJS() as Record<string, any> | null)
    .filter((d): d is Record<string, any> => d !== null);
}

describe('deployment artifacts', () => {
  it('approvals.yaml is what the generator writes from the services in the code', () => {
    expect(readFileSync(join(K8S, 'approvals.yaml'), 'utf8')).toBe(renderYaml(manifests()));
  });

  it('every Kubernetes resource is valid against its schema (custom resources: apiVersion, kind, name)', () => {
    const files = readdirSync(K8S).filter((f) => f.endsWith('.yaml') && f !== 'nats-values.yaml');
    expect(files.sort()).toEqual(['approvals.yaml', 'postgres-cnpg.yaml', 'secrets.example.yaml']);
    let validated = 0;
    for (const file of files) {
      for (const doc of docsOf(file)) {
        const model = MODELS[`${doc.apiVersion}/${doc.kind}`];
        if (model) {
          expect(() => new model(doc).validate()).not.toThrow();
          validated++;
        } else {
          expect({ file, apiVersion: doc.apiVersion, kind: doc.kind }).toMatchObject({
            apiVersion: expect.stringMatching(/^postgresql\.cnpg\.io\//),
            kind: expect.any(String),
          });
          expect(doc.metadata?.name).toEqual(expect.any(String));
        }
      }
    }
    expect(validated).toBeGreaterThanOrEqual(2 + 4 * SERVICE_NAMES.length);
  });

  it('a broken resource is refused by the same validation (the check has teeth)', () => {
    const d = structuredClone(manifests().find((m) => m.kind === 'Deployment')!) as any;
    d.spec.template.spec.containers[0].ports[0].containerPort = 'not a port';
    expect(() => new Deployment(d).validate()).toThrow();
  });

  it('every service in the code has a Deployment with probes, resources and drain time, a Service, a PDB and an HPA', () => {
    const docs = docsOf('approvals.yaml');
    for (const s of SERVICE_NAMES) {
      const of = (kind: string) => docs.find((d) => d.kind === kind && d.metadata.name === `approvals-${s}`);
      const dep = of('Deployment');
      expect(dep).toBeDefined();
      const c = dep!.spec.template.spec.containers[0];
      expect(c.args).toEqual([s]);
      expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
      expect(c.livenessProbe.httpGet).toEqual({ path: '/livez', port: 'metrics' });
      expect(c.resources.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
      expect(dep!.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(30);
      expect(dep!.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
      expect(of('Service')).toBeDefined();
      expect(of('PodDisruptionBudget')!.spec.minAvailable).toBe(1);
      expect(of('HorizontalPodAutoscaler')!.spec.minReplicas).toBe(2);
    }
    const job = docs.find((d) => d.kind === 'Job')!.spec.template.spec.containers[0];
    expect(job.args).toEqual(['migrate']);
    // It provisions JetStream too: the NATS servers (the ConfigMap) and the admin user's password.
    expect(job.envFrom).toEqual(expect.arrayContaining([{ configMapRef: { name: 'approvals-config' } }]));
    expect(job.env).toEqual(
      expect.arrayContaining([
        { name: 'NATS_ADMIN_USER', value: 'admin' },
        { name: 'NATS_ADMIN_PASSWORD', valueFrom: { secretKeyRef: { name: 'approvals-nats', key: 'admin' } } },
      ]),
    );
    expect(docsOf('secrets.example.yaml').find((d) => d.metadata.name === 'approvals-nats')!.stringData.admin).toEqual(expect.any(String));
    // Only the Job: no service runs as the admin.
    for (const s of SERVICE_NAMES) {
      const env = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === `approvals-${s}`)!.spec.template.spec.containers[0].env as Array<{
        name: string;
      }>;
      expect(env.map((e) => e.name)).not.toContain('NATS_ADMIN_PASSWORD');
    }
  });

  it('the metrics port listens on the pod address where it is probed and scraped, behind METRICS_TOKEN; compose keeps it on loopback', () => {
    const docs = docsOf('approvals.yaml');
    const config = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'approvals-config')!;
    // The services listen on 127.0.0.1 unless told: the kubelet and Prometheus come from outside the pod.
    expect(config.data).toMatchObject({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' });
    for (const dep of docs.filter((d) => d.kind === 'Deployment')) {
      expect(dep.spec.template.spec.containers[0].envFrom).toContainEqual({ secretRef: { name: 'approvals-secrets' } });
    }
    const secret = docsOf('secrets.example.yaml').find((d) => d.kind === 'Secret' && d.metadata.name === 'approvals-secrets')!;
    expect(secret.stringData.METRICS_TOKEN.length).toBeGreaterThanOrEqual(16);
    const scrape = parseYaml(read('deploy', 'observability', 'prometheus.yaml')).scrape_configs.find((c: { job_name: string }) => c.job_name === 'approvals');
    expect(scrape.authorization).toMatchObject({ type: 'Bearer', credentials_file: expect.any(String) });
    // Compose: nothing scrapes across its network; the health check reads /livez on loopback.
    const compose = parseYaml(read('deploy', 'docker', 'compose.yaml'));
    expect(compose['x-service'].environment.METRICS_HOST).toBeUndefined();
    expect(read('deploy', 'docker', 'healthcheck.js')).toContain("host: '127.0.0.1'");
  });

  it("at every service's most replicas, the fixed pools fit the database's max_connections with room for the migrations Job and an operator", () => {
    const deployments = docsOf('approvals.yaml').filter((d) => d.kind === 'Deployment');
    const hpas = docsOf('approvals.yaml').filter((d) => d.kind === 'HorizontalPodAutoscaler');
    let atMost = 0;
    for (const service of SERVICE_NAMES) {
      const dep = deployments.find((d) => d.metadata.name === `approvals-${service}`)!;
      const env = dep.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>;
      const pool = Number(env.find((e) => e.name === 'DB_POOL_MAX')?.value);
      // No DB_POOL_MIN: the pool is fixed, all of it opened at start.
      expect(env.find((e) => e.name === 'DB_POOL_MIN')).toBeUndefined();
      expect(pool).toBeGreaterThanOrEqual(2);
      const hpa = hpas.find((h) => h.spec.scaleTargetRef.name === `approvals-${service}`)!;
      atMost += hpa.spec.maxReplicas * pool;
    }
    const cluster = docsOf('postgres-cnpg.yaml').find((d) => d.kind === 'Cluster')!;
    const maxConnections = Number(cluster.spec.postgresql.parameters.max_connections);
    expect(atMost).toBeLessThanOrEqual(maxConnections - 20);
  });

  it('the NATS chart values make a 3-node JetStream cluster; compose runs every service twice on three NATS nodes', () => {
    const nats = parseYaml(readFileSync(join(K8S, 'nats-values.yaml'), 'utf8'));
    expect(nats.config.cluster).toMatchObject({ enabled: true, replicas: 3 });
    expect(nats.config.jetstream.enabled).toBe(true);
    // nats-server collects as the embedded one does, with a soft limit under the container's.
    expect(nats.container.env.GOGC).toBe(NATS_GOGC);
    const mib = (q: string) => Number(/^(\d+)(Mi|Gi)B?$/.exec(q)![1]) * (q.includes('Gi') ? 1024 : 1);
    expect(mib(nats.container.env.GOMEMLIMIT)).toBeLessThan(mib(nats.container.merge.resources.limits.memory));

    const compose = parseYaml(read('deploy', 'docker', 'compose.yaml'), { merge: true });
    for (const s of SERVICE_NAMES) {
      expect(compose.services[s]).toBeDefined();
      expect(compose.services[s].deploy.replicas).toBe(2);
      expect(compose.services[s].command).toEqual([s]);
      expect(compose.services[s].environment.JETSTREAM_REPLICAS).toBe('3');
    }
    expect(Object.keys(compose.services).filter((k) => k.startsWith('nats-'))).toEqual(['nats-1', 'nats-2', 'nats-3']);
    // `migrate` provisions JetStream as the admin user once the NATS servers are up, before any service starts.
    expect(compose.services.migrate.environment).toMatchObject({
      NATS_ADMIN_USER: 'admin',
      NATS_ADMIN_PASSWORD: '${NATS_PASSWORD_ADMIN}',
      JETSTREAM_REPLICAS: '3',
    });
    expect(Object.keys(compose.services.migrate.depends_on)).toEqual(expect.arrayContaining(['postgres', 'nats-1', 'nats-2', 'nats-3']));
    for (const s of SERVICE_NAMES) {
      expect(compose.services[s].depends_on.migrate).toEqual({ condition: 'service_completed_successfully' });
      expect(compose.services[s].environment.NATS_ADMIN_PASSWORD).toBeUndefined();
    }
    expect(read('deploy', 'docker', 'generate-secrets.sh')).toMatch(/^NATS_PASSWORD_ADMIN=\$\(pw admin\)$/m);
    for (const n of ['nats-1', 'nats-2', 'nats-3']) expect(compose.services[n].environment.GOGC).toBe(NATS_GOGC);
    // Every replica opens its pool at start: the database must take them all, and an operator.
    const pools = SERVICE_NAMES.reduce((n, s) => n + compose.services[s].deploy.replicas * Number(compose.services[s].environment.DB_POOL_MAX ?? 10), 0);
    const maxConnections = Number(/max_connections=(\d+)/.exec((compose.services.postgres.command ?? []).join(' '))?.[1] ?? 100);
    expect(pools).toBeLessThanOrEqual(maxConnections - 20);
    const dockerfile = read('deploy', 'docker', 'Dockerfile');
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK /m);
    expect(dockerfile.match(/^FROM /gm)!.length).toBeGreaterThanOrEqual(2);
    // The image runs its services with the same Node flags as npm start.
    expect(JSON.parse(/^ENTRYPOINT (.*)$/m.exec(dockerfile)![1]!)).toEqual(['node', ...SERVICE_NODE_FLAGS, 'deploy/docker/entrypoint.js']);
  });

  it("the services' Node flags are taken by this Node and start the young generation at 16 MB", () => {
    const newSpaceMb = (flags: readonly string[]) => {
      const run = spawnSync(
        process.execPath,
        [...flags, '-e', "process.stdout.write(String(require('v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 1048576))"],
        { encoding: 'utf8', timeout: 30_000 },
      );
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      return Number(run.stdout);
    };
    // Without the flags V8 starts it at 1 MB and sizes it as it goes.
    expect(newSpaceMb([])).toBeLessThan(16);
    expect(newSpaceMb(SERVICE_NODE_FLAGS)).toBeGreaterThanOrEqual(16);
  });

  it('the alert rules and the dashboard use only metrics the code exports', () => {
    collectProcessMetrics();
    const exported = new Set(metricsRegistry.getMetricsAsArray().map((m) => m.name));
    // Gauges read at scrape time are registered when a service starts: found in the code (their names as literals).
    const sources = [join(ROOT, 'shared', 'src'), ...SERVICE_NAMES.map((s) => join(ROOT, 'services', s, 'src'))];
    const walk = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
    for (const f of sources.flatMap(walk)) for (const m of readFileSync(f, 'utf8').matchAll(/'(approvals_[a-z_]+)'/g)) exported.add(m[1]!);
    const known = (name: string) => exported.has(name) || exported.has(name.replace(/_(bucket|count|sum)$/, ''));

    const rules = parseYaml(read('deploy', 'observability', 'alerts.yaml')).groups.flatMap((g: { rules: unknown[] }) => g.rules) as Array<{
      alert: string;
      expr: string;
    }>;
    expect(rules.length).toBeGreaterThanOrEqual(10);
    const dashboard = JSON.parse(read('deploy', 'observability', 'grafana-dashboard.json'));
    const exprs = [...rules.map((r) => r.expr), ...dashboard.panels.flatMap((p: { targets: Array<{ expr: string }> }) => p.targets.map((t) => t.expr))];
    const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\b(approvals_[a-z0-9_]+)/g)].map((m) => m[1]!)));
    expect(used.size).toBeGreaterThanOrEqual(12);
    expect([...used].filter((n) => !known(n))).toEqual([]);
  });

  it('the image entry migrates every schema, provisions JetStream as the NATS admin user, and refuses an unknown service', async () => {
    const db = await createTestDatabase('migrate');
    const nats = await startTestNats({ provision: false });
    const admin = nats.users!.admin;
    try {
      const entry = join(ROOT, 'deploy', 'docker', 'entrypoint.js');
      const env = { ...process.env, DATABASE_URL: db.url, NATS_URL: nats.serviceUrl, LOG_LEVEL: 'silent' };
      // As a service's user: JetStream administration is refused, and it says which user it takes.
      const refused = spawnSync(process.execPath, [entry, 'migrate'], {
        env: { ...env, NATS_ADMIN_USER: nats.users!.scheduler.user, NATS_ADMIN_PASSWORD: nats.users!.scheduler.password },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(refused.status).toBe(1);
      expect(refused.stderr).toMatch(/JetStream provisioning refused: .*Permissions Violation.*NATS_ADMIN_USER/);
      // As the image's ENTRYPOINT runs it: this Node takes the services' flags.
      const run = spawnSync(process.execPath, [...SERVICE_NODE_FLAGS, entry, 'migrate'], {
        env: { ...env, NATS_ADMIN_USER: admin.user, NATS_ADMIN_PASSWORD: admin.password },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
      const bus = await Bus.connect({ url: nats.url, name: 'migrate-check', log: createLogger('t', 'silent') });
      try {
        const names: string[] = [];
        for await (const c of (await bus.jsm()).consumers.list(STREAM_EVENTS)) names.push(c.name);
        expect(names.sort()).toEqual(Object.keys(DURABLE_SUBJECT).sort());
      } finally {
        await bus.close();
      }
      const pg = new Client({ connectionString: db.url });
      await pg.connect();
      const schemas = (
        await pg.query(`SELECT schema_name FROM information_schema.schemata WHERE schema_name = ANY($1) ORDER BY 1`, [
          ['access', 'decisions', 'notifier', 'policies', 'scheduler', 'surfaces'],
        ])
      ).rows.map((r) => r.schema_name);
      await pg.end();
      expect(schemas).toEqual(['access', 'decisions', 'notifier', 'policies', 'scheduler', 'surfaces']);
      const bad = spawnSync(process.execPath, [entry, 'nope'], { encoding: 'utf8' });
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain('usage');
    } finally {
      await nats.stop();
      await db.drop();
    }
  });
});
