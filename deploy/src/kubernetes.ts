import { SERVICE_NAMES, type ServiceName } from '@approvals/shared';

/**
 * The Kubernetes manifests of the services, generated from the list of services in the
 * code so none is forgotten: per service a Deployment (probes on the metrics port,
 * resources, non-root, graceful drain), a Service, a PodDisruptionBudget and a
 * HorizontalPodAutoscaler; the shared ConfigMap and the migrations Job (the schemas, and
 * JetStream's streams, bucket and durables as the NATS admin user).
 * `node deploy/dist/kubernetes.js > deploy/kubernetes/approvals.yaml` writes them; the
 * test suite checks the file is up to date and valid against the Kubernetes schemas.
 */

export const IMAGE = 'ghcr.io/example/approvals:1.0.0';
const METRICS_PORT = 9464;
const HTTP_PORT = 8080;
/** The image's `node` user, no privileges, a read-only root filesystem (writes go to /tmp). */
const POD_SECURITY = { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } };
const CONTAINER_SECURITY = { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } };
const LABELS = (service: string) => ({ 'app.kubernetes.io/name': 'approvals', 'app.kubernetes.io/component': service });

/**
 * CPU and memory per replica, from the bench's per-process figures (docs/operations.md);
 * `max` replicas (the autoscaler's bound) and each replica's PostgreSQL pool (`pool`,
 * DB_POOL_MAX, a fixed pool opened at start): at most replicas, the pools together stay
 * within the database's `max_connections` (postgres-cnpg.yaml) with room for the
 * migrations Job and an operator, so a scale-out never starts a replica the database
 * refuses. The decisions service holds its connections longest; the gateway only reads
 * API keys (cached) and writes the audit log.
 */
const RESOURCES: Record<ServiceName, { cpu: string; memory: string; cpuLimit: string; memoryLimit: string; max: number; pool: number }> = {
  gateway: { cpu: '250m', memory: '256Mi', cpuLimit: '1', memoryLimit: '512Mi', max: 10, pool: 4 },
  decisions: { cpu: '250m', memory: '256Mi', cpuLimit: '1', memoryLimit: '768Mi', max: 10, pool: 10 },
  policies: { cpu: '100m', memory: '256Mi', cpuLimit: '1', memoryLimit: '768Mi', max: 6, pool: 4 },
  notifier: { cpu: '100m', memory: '256Mi', cpuLimit: '1', memoryLimit: '512Mi', max: 6, pool: 6 },
  surfaces: { cpu: '100m', memory: '192Mi', cpuLimit: '500m', memoryLimit: '512Mi', max: 6, pool: 4 },
  scheduler: { cpu: '100m', memory: '192Mi', cpuLimit: '500m', memoryLimit: '512Mi', max: 4, pool: 4 },
};

function deployment(service: ServiceName): Record<string, unknown> {
  const r = RESOURCES[service];
  const ports = [{ name: 'metrics', containerPort: METRICS_PORT }, ...(service === 'gateway' ? [{ name: 'http', containerPort: HTTP_PORT }] : [])];
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: `approvals-${service}`, labels: LABELS(service) },
    spec: {
      replicas: 2,
      selector: { matchLabels: LABELS(service) },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: {
          labels: LABELS(service),
          annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(METRICS_PORT), 'prometheus.io/path': '/metrics' },
        },
        spec: {
          // SHUTDOWN_DELAY_MS of not-ready serving, then the drain (at most 25 s), inside this.
          terminationGracePeriodSeconds: 40,
          securityContext: { ...POD_SECURITY, fsGroup: 1000 },
          topologySpreadConstraints: [
            { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: LABELS(service) } },
          ],
          containers: [
            {
              name: service,
              image: IMAGE,
              args: [service],
              ports,
              envFrom: [{ configMapRef: { name: 'approvals-config' } }, { secretRef: { name: 'approvals-secrets' } }],
              env: [
                { name: 'NATS_USER', value: service },
                { name: 'NATS_PASSWORD', valueFrom: { secretKeyRef: { name: 'approvals-nats', key: service } } },
                { name: 'SHUTDOWN_DELAY_MS', value: service === 'gateway' ? '5000' : '2000' },
                { name: 'DB_POOL_MAX', value: String(r.pool) },
              ],
              startupProbe: { httpGet: { path: '/livez', port: 'metrics' }, periodSeconds: 2, failureThreshold: 60 },
              readinessProbe: { httpGet: { path: '/readyz', port: 'metrics' }, periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 2 },
              livenessProbe: { httpGet: { path: '/livez', port: 'metrics' }, periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 3 },
              resources: { requests: { cpu: r.cpu, memory: r.memory }, limits: { cpu: r.cpuLimit, memory: r.memoryLimit } },
              securityContext: CONTAINER_SECURITY,
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
            },
          ],
          volumes: [{ name: 'tmp', emptyDir: {} }],
        },
      },
    },
  };
}

function service(s: ServiceName): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: `approvals-${s}`, labels: LABELS(s) },
    spec: {
      selector: LABELS(s),
      ports: [...(s === 'gateway' ? [{ name: 'http', port: 80, targetPort: 'http' }] : []), { name: 'metrics', port: METRICS_PORT, targetPort: 'metrics' }],
    },
  };
}

function pdb(s: ServiceName): Record<string, unknown> {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: `approvals-${s}`, labels: LABELS(s) },
    spec: { minAvailable: 1, selector: { matchLabels: LABELS(s) } },
  };
}

function hpa(s: ServiceName): Record<string, unknown> {
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name: `approvals-${s}`, labels: LABELS(s) },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: `approvals-${s}` },
      minReplicas: 2,
      maxReplicas: RESOURCES[s].max,
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }],
      behavior: { scaleDown: { stabilizationWindowSeconds: 300 } },
    },
  };
}

export function manifests(): Array<Record<string, unknown>> {
  const config = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'approvals-config', labels: { 'app.kubernetes.io/name': 'approvals' } },
    data: {
      NATS_URL: 'nats://nats-0.nats-headless:4222,nats://nats-1.nats-headless:4222,nats://nats-2.nats-headless:4222',
      JETSTREAM_REPLICAS: '3',
      METRICS_PORT: String(METRICS_PORT),
      // The kubelet's probes and Prometheus reach the metrics port on the pod's address, not
      // its loopback; METRICS_TOKEN (approvals-secrets) guards /metrics there.
      METRICS_HOST: '0.0.0.0',
      PORT: String(HTTP_PORT),
      PUBLIC_BASE_URL: 'https://approvals.example.com',
      TRUST_PROXY: '1',
      LOG_LEVEL: 'info',
    },
  };
  const migrate = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'approvals-migrate', labels: LABELS('migrate') },
    spec: {
      backoffLimit: 6,
      ttlSecondsAfterFinished: 3600,
      template: {
        metadata: { labels: LABELS('migrate') },
        spec: {
          restartPolicy: 'OnFailure',
          securityContext: POD_SECURITY,
          containers: [
            {
              name: 'migrate',
              image: IMAGE,
              args: ['migrate'],
              // The schemas, then JetStream (streams, bucket, durables) as the NATS admin user:
              // the services' users may not make them, and stop at start if they are missing.
              envFrom: [{ configMapRef: { name: 'approvals-config' } }, { secretRef: { name: 'approvals-secrets' } }],
              env: [
                { name: 'NATS_ADMIN_USER', value: 'admin' },
                { name: 'NATS_ADMIN_PASSWORD', valueFrom: { secretKeyRef: { name: 'approvals-nats', key: 'admin' } } },
              ],
              resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
              securityContext: CONTAINER_SECURITY,
            },
          ],
        },
      },
    },
  };
  return [config, migrate, ...SERVICE_NAMES.flatMap((s) => [deployment(s), service(s), pdb(s), hpa(s)])];
}

export function renderYaml(docs: Array<Record<string, unknown>>): string {
  // JSON is YAML: one document per resource, stable and diffable without a YAML library at runtime.
  return `# Generated by \`node deploy/dist/kubernetes.js\` from the services in the code: do not edit by hand.\n${docs.map((d) => `---\n${JSON.stringify(d, null, 2)}\n`).join('')}`;
}

if (require.main === module) process.stdout.write(renderYaml(manifests()));
