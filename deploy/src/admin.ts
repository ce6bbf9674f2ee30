import { readFileSync } from 'node:fs';
import {
  Bus,
  createDb,
  createLogger,
  type Knex,
  type UserRole,
  dropDeadLetter,
  getDeadLetter,
  listDeadLetters,
  migrate,
  natsAuthorizationConfig,
  replayDeadLetter,
} from '@approvals/shared';
import type { NatsUsers } from '@approvals/shared/infra';
import { signSessionToken } from '@approvals/gateway/dist/auth/jwt';
import { migrations } from '@approvals/gateway/dist/migrations/index';
import { createAccessStore } from '@approvals/gateway/dist/store/access.store';
import { createMembersStore, MEMBER_ROLES, type MemberRole } from '@approvals/gateway/dist/store/members.store';
import { localJwtSecret, localNatsUsers, readRuntime, rotateLocalReceiptKey } from './dev-env';

const USAGE = `usage:
  npm run admin -- bootstrap --org <org id> --email <email> [--name <key name>]
      prints {"orgId","sessionToken","apiKey"} for a first admin; refused when the org already has
      an unrevoked key of that name (bootstrap run twice): nothing is changed
  npm run admin -- session --org <org id> --email <email> [--role admin|editor|member|reviewer] [--sub <user id>] [--ttl <seconds>]
      prints a session token, and the web app sign-in link (/app/login#token=…) on stderr; with the
      database reachable, the person becomes a member with that role (reviewer: none is made)
  npm run admin -- quota --org <org id> --limit <decisions per month | none>
      sets the org's monthly decision quota (none = back to the deployment default)
  npm run admin -- dlq list [--durable <name>] | dlq show <seq> | dlq replay <seq> | dlq drop <seq>
      events a consumer could not handle, parked in the DEADLETTER stream with the reason:
      list them, show one, publish one again once the cause is fixed, or drop it
  npm run admin -- nats-config [--passwords <file.json>]
      prints the authorization block of a nats-server configuration: one user per service with
      its permissions (BUS_ROLES: JetStream use, its administration denied), and admin (which
      provisions JetStream); passwords from the JSON file (same shape as .data/nats-auth.json),
      else .data/nats-auth.json (generated when missing)
  npm run admin -- receipt-key-rotate
      local runs: a new receipt-signing key in .data/secrets.json becomes current at the next
      npm start; the old one's public key stays in the JWKS as retired (docs/receipts.md)`;

function parseArgs(argv: string[]): { cmd?: string; flags: Record<string, string> } {
  const [cmd, ...rest] = argv;
  const flags: Record<string, string> = {};
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}\n${USAGE}`);
    const [k, inline] = a.slice(2).split('=', 2);
    const v = inline ?? rest[++i];
    if (v === undefined) throw new Error(`--${k} needs a value\n${USAGE}`);
    flags[k] = v;
  }
  return { cmd, flags };
}

function required(flags: Record<string, string>, name: string): string {
  const v = flags[name];
  if (!v) throw new Error(`--${name} is required\n${USAGE}`);
  return v;
}

function checkEmail(email: string): string {
  if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) throw new Error(`--email ${email} is not an email address`);
  return email.toLowerCase();
}

const cmd0 = (argv: string[]) => argv[0];

/** The gateway's schema, migrated, for the commands that write it. */
async function withAccessDb(databaseUrl: string, work: (db: Knex) => Promise<void>): Promise<void> {
  const db = createDb({ url: databaseUrl, schema: 'access', poolMax: 2 });
  try {
    await migrate(db, 'access', migrations);
    await work(db);
  } finally {
    await db.destroy();
  }
}

/** Where the running system is reached (what npm start recorded), for sign-in links. */
function appBaseUrl(): string {
  return (process.env.APP_BASE_URL ?? process.env.PUBLIC_BASE_URL ?? readRuntime()?.baseUrl ?? `http://localhost:${process.env.PORT ?? 8080}`).replace(
    /\/$/,
    '',
  );
}

export async function main(argv: string[]): Promise<void> {
  const { cmd, flags } = cmd0(argv) === 'dlq' ? { cmd: 'dlq', flags: {} as Record<string, string> } : parseArgs(argv);
  const secret = localJwtSecret();
  if (cmd === 'session') {
    const org = required(flags, 'org');
    const email = checkEmail(required(flags, 'email'));
    const role = flags.role ?? 'member';
    if (!(MEMBER_ROLES as readonly string[]).includes(role) && role !== 'reviewer') throw new Error('--role must be admin, editor, member or reviewer');
    // A member's role is the org's member list, not the token's claim (a demotion holds):
    // the operator's word makes it so, when the database can be reached.
    const databaseUrl = process.env.DATABASE_URL ?? readRuntime()?.databaseUrl;
    if (databaseUrl && role !== 'reviewer') {
      await withAccessDb(databaseUrl, async (db) => {
        const store = createAccessStore(db);
        await store.ensureOrg(org);
        const members = createMembersStore(db, { audit: (trx, entries) => store.appendAuditMany(entries, trx) });
        await members.ensure(org, email, role as MemberRole, { id: 'admin-cli', label: 'admin CLI' });
      });
    }
    const token = signSessionToken(secret, { sub: flags.sub ?? `usr_${email}`, email, org, role: role as UserRole }, Number(flags.ttl ?? 12 * 3600));
    process.stdout.write(`${token}\n`);
    // The web app's sign-in link (the token rides in the fragment: never sent to a server).
    process.stderr.write(`Sign in to the web app: ${appBaseUrl()}/app/login#token=${token}\n`);
    return;
  }
  if (cmd === 'bootstrap') {
    const org = required(flags, 'org');
    const email = checkEmail(required(flags, 'email'));
    const databaseUrl = process.env.DATABASE_URL ?? readRuntime()?.databaseUrl;
    if (!databaseUrl) throw new Error('no database: start the system with `npm start` first, or set DATABASE_URL');
    const name = flags.name ?? 'bootstrap';
    await withAccessDb(databaseUrl, async (db) => {
      const store = createAccessStore(db);
      // Run twice, it would mint a second key of the same name that nobody can tell from the
      // first: refused, with nothing changed, and the ways on said.
      const same = (await store.listApiKeys(org)).find((k) => k.name === name && !k.revoked_at);
      if (same) {
        throw new Error(
          `org ${org} already has an API key named "${name}" (${same.prefix}…, ${same.id}, created ${same.created_at.toISOString()}): ` +
            `bootstrap was already run for it, and nothing was changed.\n` +
            `  sign in:        npm run admin -- session --org ${org} --email ${email} --role admin\n` +
            `  another key:    npm run admin -- bootstrap --org ${org} --email ${email} --name <another name>\n` +
            `  lost the key:   revoke or rotate it in the web app (API keys) or with POST /v1/api-keys/${same.id}/rotate`,
        );
      }
      await store.ensureOrg(org);
      const sub = flags.sub ?? `usr_${email}`;
      await store.touchUser({ org, id: sub, email, role: 'admin' });
      const members = createMembersStore(db, { audit: (trx, entries) => store.appendAuditMany(entries, trx) });
      await members.ensure(org, email, 'admin', { id: 'admin-cli', label: 'admin CLI' });
      const roles = ['decisions:write', 'policies:write'] as const;
      const { key, row } = await store.createApiKey({ org, name, roles: [...roles], createdBy: sub });
      // Like a key made over HTTP: every key's creation is in the org's audit log.
      await store.appendAudit({ org, action: 'api_key.created', actor: sub, target: row.id, details: { roles: [...roles], via: 'admin bootstrap' } });
      const sessionToken = signSessionToken(secret, { sub, email, org, role: 'admin' }, Number(flags.ttl ?? 12 * 3600));
      process.stdout.write(`${JSON.stringify({ orgId: org, sessionToken, apiKey: key, signInUrl: `${appBaseUrl()}/app/login#token=${sessionToken}` })}\n`);
    });
    return;
  }
  if (cmd === 'dlq') {
    const [sub, arg] = argv.slice(1);
    const flags2 = parseArgs(['dlq', ...argv.slice(sub === 'list' ? 2 : 3)]).flags;
    const natsUrl = process.env.NATS_URL ?? readRuntime()?.natsUrl;
    if (!natsUrl) throw new Error('no NATS: start the system with `npm start` first, or set NATS_URL');
    const admin = process.env.NATS_URL ? undefined : localNatsUsers().admin;
    const bus = await Bus.connect({
      url: natsUrl,
      name: 'admin-cli',
      log: createLogger('admin', 'silent'),
      auth: admin ? { user: admin.user, pass: admin.password } : undefined,
    });
    try {
      const seq = Number(arg);
      if (sub !== 'list' && !Number.isInteger(seq)) throw new Error(`dlq ${sub ?? ''} needs a sequence number\n${USAGE}`);
      if (sub === 'list') {
        for (const l of await listDeadLetters(bus, { durable: flags2.durable, limit: 1000 })) {
          process.stdout.write(
            `${JSON.stringify({ seq: l.seq, durable: l.durable, subject: l.subject, eventId: l.eventId, reason: l.reason, error: l.error, at: l.at })}\n`,
          );
        }
      } else if (sub === 'show') {
        const l = await getDeadLetter(bus, seq);
        if (!l) throw new Error(`no dead letter ${seq}`);
        process.stdout.write(`${JSON.stringify(l, null, 2)}\n`);
      } else if (sub === 'replay') {
        const l = await replayDeadLetter(bus, seq);
        process.stdout.write(`${JSON.stringify({ replayed: seq, subject: l.subject, eventId: l.eventId })}\n`);
      } else if (sub === 'drop') {
        process.stdout.write(`${JSON.stringify({ dropped: seq, found: await dropDeadLetter(bus, seq) })}\n`);
      } else throw new Error(USAGE);
    } finally {
      await bus.close();
    }
    return;
  }
  if (cmd === 'receipt-key-rotate') {
    const { retired } = rotateLocalReceiptKey();
    process.stdout.write(`${JSON.stringify({ rotated: true, retired, takesEffect: 'at the next npm start' }, null, 2)}\n`);
    return;
  }
  if (cmd === 'nats-config') {
    const users = flags.passwords ? (JSON.parse(readFileSync(flags.passwords, 'utf8')) as NatsUsers) : localNatsUsers();
    process.stdout.write(natsAuthorizationConfig(users));
    return;
  }
  if (cmd === 'quota') {
    const org = required(flags, 'org');
    const raw = required(flags, 'limit');
    const limit = raw === 'none' ? null : Number(raw);
    if (limit !== null && (!Number.isInteger(limit) || limit <= 0)) throw new Error('--limit must be a positive integer or none');
    const databaseUrl = process.env.DATABASE_URL ?? readRuntime()?.databaseUrl;
    if (!databaseUrl) throw new Error('no database: start the system with `npm start` first, or set DATABASE_URL');
    const db = createDb({ url: databaseUrl, schema: 'decisions', poolMax: 1 });
    try {
      // none: the row goes, and the org is back on the deployment default (DECISION_QUOTA_PER_MONTH).
      if (limit === null) await db('org_quotas').where({ org_id: org }).delete();
      else
        await db('org_quotas')
          .insert({ org_id: org, monthly_decision_limit: limit, plan: 'manual' })
          .onConflict('org_id')
          .merge({ monthly_decision_limit: limit, plan: 'manual', updated_at: db.fn.now() });
      process.stdout.write(`${JSON.stringify({ orgId: org, monthlyDecisionLimit: limit })}\n`);
    } finally {
      await db.destroy();
    }
    return;
  }
  throw new Error(USAGE);
}
