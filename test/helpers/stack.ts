import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { SERVICE_NAMES, createLogger, type Clock, type RunningService, type ServiceName } from '@approvals/shared';
import { createTestDatabase, startTestNats, type TestDatabase, type TestNats } from '@approvals/shared/testing';
import { startGateway } from '../../services/gateway/src/app';
import { GatewayEnv } from '../../services/gateway/src/config';
import { signSessionToken } from '../../services/gateway/src/auth/jwt';
import { startDecisions } from '../../services/decisions/src/app';
import { DecisionsEnv } from '../../services/decisions/src/config';
import { startPolicies } from '../../services/policies/src/app';
import { PoliciesEnv } from '../../services/policies/src/config';
import { startNotifier } from '../../services/notifier/src/app';
import { NotifierEnv } from '../../services/notifier/src/config';
import { startSurfaces } from '../../services/surfaces/src/app';
import { SurfacesEnv } from '../../services/surfaces/src/config';
import { startScheduler } from '../../services/scheduler/src/app';
import { SchedulerEnv } from '../../services/scheduler/src/config';

export interface HttpResult<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export interface StackOptions {
  /** Which services to run in-process (default: all six). */
  services?: readonly ServiceName[];
  /** Extra env for every service (for example SMTP_URL or INNGEST_URL). */
  env?: Record<string, string>;
  /** Extra env for one service only. */
  serviceEnv?: Partial<Record<ServiceName, Record<string, string>>>;
  clock?: Clock;
  label?: string;
  /** A PostgreSQL server of the test's own (default: the suite's, TEST_DATABASE_URL). */
  adminUrl?: string;
}

export interface Stack {
  baseUrl: string;
  db: TestDatabase;
  nats: TestNats;
  secret: string;
  env: Record<string, string>;
  running: Map<ServiceName, RunningService>;
  /** Starts one more replica (or a restarted instance) of a service. */
  startService(name: ServiceName, extraEnv?: Record<string, string>): Promise<RunningService & { url?: string }>;
  stopService(name: ServiceName): Promise<void>;
  stop(): Promise<void>;
  session(claims: { org: string; email: string; sub?: string; role?: 'admin' | 'editor' | 'member' | 'reviewer' }): string;
  /** A fresh org with an admin session and an API key (created through the HTTP API). */
  newOrg(opts?: { roles?: string[]; org?: string }): Promise<{ org: string; admin: string; apiKey: string; keyId: string; adminEmail: string }>;
  /** `baseUrl` targets another gateway replica (default: the first gateway). */
  http<T = any>(
    method: string,
    path: string,
    opts?: { token?: string; body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string>; baseUrl?: string },
  ): Promise<HttpResult<T>>;
}

type Starter = (env: Record<string, string>, clock?: Clock) => Promise<RunningService & { url?: string }>;

const logLevel = () => process.env.TEST_LOG_LEVEL ?? 'silent';

const STARTERS: Record<ServiceName, Starter> = {
  gateway: (env, clock) => startGateway(GatewayEnv.parse(env), { clock, log: createLogger('gateway', logLevel()) }),
  decisions: (env, clock) => startDecisions(DecisionsEnv.parse(env), { clock, log: createLogger('decisions', logLevel()) }),
  policies: (env, clock) => startPolicies(PoliciesEnv.parse(env), { clock, log: createLogger('policies', logLevel()) }),
  notifier: (env, clock) => startNotifier(NotifierEnv.parse(env), { clock, log: createLogger('notifier', logLevel()) }),
  surfaces: (env, clock) => startSurfaces(SurfacesEnv.parse(env), { clock, log: createLogger('surfaces', logLevel()) }),
  scheduler: (env, clock) => startScheduler(SchedulerEnv.parse(env), { clock, log: createLogger('scheduler', logLevel()) }),
};

/**
 * The whole system in this test process: real PostgreSQL (a database of its own), a
 * real nats-server of its own (JetStream provisioned by its admin user, as `npm start`
 * does, before any service starts), every service started through its own start function,
 * and the gateway on a free port. Nothing is mocked.
 */
export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const db = await createTestDatabase(opts.label ?? 'stack', opts.adminUrl);
  const nats = await startTestNats();
  const secret = randomBytes(24).toString('hex');
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    NATS_URL: nats.url,
    AUTH_JWT_SECRET: secret,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    // A receipt-signing key of its own, as `npm start` generates one (docs/receipts.md).
    RECEIPT_SIGNING_KEY: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    LOG_LEVEL: logLevel(),
    PORT: '0',
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: 'http://127.0.0.1:0',
    ...opts.env,
  };
  const running = new Map<ServiceName, RunningService>();
  const extras: RunningService[] = [];
  let baseUrl = '';
  const wanted = opts.services ?? SERVICE_NAMES;

  // Each service connects as its own NATS user, with the permissions npm start gives it.
  const natsEnv = (name: ServiceName): Record<string, string> =>
    nats.users ? { NATS_URL: nats.serviceUrl, NATS_USER: nats.users[name].user, NATS_PASSWORD: nats.users[name].password } : {};
  const startOne = async (name: ServiceName, extraEnv: Record<string, string> = {}) => {
    const svc = await STARTERS[name]({ ...env, ...natsEnv(name), ...(opts.serviceEnv?.[name] ?? {}), ...extraEnv }, opts.clock);
    if (running.has(name)) extras.push(svc);
    else running.set(name, svc);
    if (name === 'gateway' && 'url' in svc && svc.url && !baseUrl) baseUrl = svc.url as string;
    return svc;
  };

  try {
    // Domain services first so the gateway finds them; they start independently of one another.
    await Promise.all(wanted.filter((n) => n !== 'gateway').map((n) => startOne(n)));
    if (wanted.includes('gateway')) await startOne('gateway');
  } catch (err) {
    for (const s of [...running.values(), ...extras]) await s.stop().catch(() => undefined);
    await nats.stop();
    await db.drop().catch(() => undefined);
    throw err;
  }

  const session: Stack['session'] = (c) => signSessionToken(secret, { sub: c.sub ?? `usr_${c.email}`, email: c.email, org: c.org, role: c.role ?? 'member' });

  const http: Stack['http'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    let body: string | Buffer | undefined;
    if (o.rawBody !== undefined) body = o.rawBody;
    else if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${o.baseUrl ?? baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    return { status: res.status, body: parsed, headers: res.headers, text };
  };

  let orgSeq = 0;
  const newOrg: Stack['newOrg'] = async (o = {}) => {
    const org = o.org ?? `org_${randomBytes(4).toString('hex')}_${++orgSeq}`;
    const adminEmail = `admin@${org.replace(/_/g, '-')}.example.com`;
    const admin = session({ org, email: adminEmail, role: 'admin' });
    const res = await http('POST', '/v1/api-keys/', { token: admin, body: { name: 'test key', roles: o.roles ?? ['decisions:write', 'policies:write'] } });
    if (res.status !== 201) throw new Error(`could not create API key: ${res.status} ${res.text}`);
    return { org, admin, apiKey: res.body.key, keyId: res.body.id, adminEmail };
  };

  return {
    get baseUrl() {
      return baseUrl;
    },
    db,
    nats,
    secret,
    env,
    running,
    startService: startOne,
    stopService: async (name) => {
      const s = running.get(name);
      running.delete(name);
      await s?.stop();
    },
    stop: async () => {
      const all = [...extras, ...running.values()];
      // Gateway first (stops HTTP), then the rest.
      all.sort((a, b) => (a.name === 'gateway' ? -1 : b.name === 'gateway' ? 1 : 0));
      for (const s of all) await s.stop().catch(() => undefined);
      await nats.stop();
      await db.drop().catch(() => undefined);
    },
    session,
    newOrg,
    http,
  };
}
