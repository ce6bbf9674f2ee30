import { randomBytes } from 'node:crypto';
import { AckPolicy } from '@nats-io/jetstream';
import { Bus, DURABLE_SUBJECT, LARGE_BUCKET_STREAM, SERVICE_NAMES, STREAM_EVENTS, createLogger } from '@approvals/shared';
import type { NatsUsers } from '@approvals/shared/infra';
import { signSessionToken } from '@approvals/gateway/dist/auth/jwt';
import { localJwtSecret, localNatsUsers, readRuntime } from './dev-env';

/**
 * `npm run attack`: the attacks of the security reviews, replayed against a running system
 * (`npm start`, or any deployment whose secrets this machine holds), each in an org of its
 * own. It prints what held and exits 1 when something did not.
 *
 *   npm run attack -- [--base-url http://localhost:8080]
 *
 * The target's session secret signs the sessions the attacks play (member, editor,
 * reviewer, admin); the NATS attacks use each service's own credentials, as a thief of one
 * would. What needs a configured provider (Slack, Discord) is tried when it is configured and
 * reported `n/a` otherwise.
 */
export interface AttackTarget {
  baseUrl: string;
  /** AUTH_JWT_SECRET of the target: the sessions the attacks play are signed with it. */
  jwtSecret: string;
  /** The NATS server and the services' users (npm start's `.data/nats-auth.json`), for the bus attacks. */
  nats?: { url: string; users: NatsUsers };
}

export interface Finding {
  attack: string;
  /** true: refused as it should be; false: it got through; null: not applicable here. */
  held: boolean | null;
  detail: string;
}

interface Http {
  status: number;
  body: any;
  headers: Headers;
}

type Check = (ctx: AttackContext) => Promise<Omit<Finding, 'attack'>>;

interface AttackContext {
  t: AttackTarget;
  http(method: string, path: string, opts?: { token?: string; body?: unknown; headers?: Record<string, string> }): Promise<Http>;
  /** A fresh org with an admin session and an API key. */
  org(
    label: string,
  ): Promise<{ org: string; admin: string; adminEmail: string; apiKey: string; as(email: string, role: 'admin' | 'editor' | 'member' | 'reviewer'): string }>;
}

const held = (detail: string) => ({ held: true, detail });
const broke = (detail: string) => ({ held: false, detail });
const na = (detail: string) => ({ held: null, detail });
const show = (r: Http) => `${r.status} ${typeof r.body === 'object' ? (r.body?.error ?? '') : ''}`.trim();

/** Every attack, most severe first (issue 42's order). */
export const ATTACKS: Record<string, Check> = {
  async "member sets another approver's chat id and votes as them"(c) {
    const o = await c.org('verify');
    const r2 = (await c.http('POST', '/v1/approvers/', { token: o.admin, body: { email: 'r2@attack.example.com' } })).body;
    const tries: string[] = [];
    for (const role of ['member', 'editor', 'reviewer'] as const) {
      for (const body of [
        { channel: 'chatA', endpoint: 'U_MALLORY', status: 'verified' },
        { channel: 'chatB', endpoint: '999', status: 'verified' },
        { surface: 'esign', resolvedRef: 'ds-mallory' },
      ]) {
        const r = await c.http('POST', `/v1/approvers/${r2.id}/verify`, { token: o.as('mallory@attack.example.com', role), body });
        if (r.status !== 403) return broke(`${role} verify ${JSON.stringify(body)} answered ${show(r)}`);
        tries.push(role);
      }
    }
    const after = (await c.http('GET', `/v1/approvers/${r2.id}`, { token: o.admin })).body;
    const planted = [...after.channels, ...after.methods].some(
      (x: { endpoint?: string; resolvedRef?: string }) => x.endpoint === 'U_MALLORY' || x.endpoint === '999' || x.resolvedRef === 'ds-mallory',
    );
    return planted ? broke('an endpoint was stored despite the 403') : held(`${tries.length} tries by member, editor and reviewer: 403, nothing stored`);
  },

  async 'member rewrites the policy that governs their approvals'(c) {
    const o = await c.org('policy');
    await c.http('POST', '/v1/policies/', { token: o.admin, body: { key: 'refunds', name: 'Refunds', defaults: { approvers: ['cfo@attack.example.com'] } } });
    const member = o.as('mallory@attack.example.com', 'member');
    const put = await c.http('PUT', '/v1/policies/refunds', { token: member, body: { defaults: { approvers: ['mallory@attack.example.com'] } } });
    const post = await c.http('POST', '/v1/policies/', {
      token: member,
      body: { key: 'refunds', name: 'Refunds', defaults: { approvers: ['mallory@attack.example.com'] } },
    });
    const del = await c.http('DELETE', '/v1/policies/refunds?force=true', { token: member });
    const now = (await c.http('GET', '/v1/policies/refunds', { token: o.admin })).body;
    if (put.status !== 403 || post.status !== 403 || del.status !== 403) return broke(`PUT ${show(put)}, POST ${show(post)}, DELETE ${show(del)}`);
    if (JSON.stringify(now.defaults?.approvers) !== JSON.stringify(['cfo@attack.example.com'])) return broke('the policy changed');
    return held('PUT, POST and DELETE by a member: 403; the policy unchanged');
  },

  async 'a policy change leaves no trace in the audit log'(c) {
    const o = await c.org('audit');
    const editor = o.as('ed@attack.example.com', 'editor');
    await c.http('POST', '/v1/policies/', { token: editor, body: { key: 'wire', name: 'Wire', defaults: { approvers: ['a@attack.example.com'] } } });
    const v2 = (await c.http('PUT', '/v1/policies/wire', { token: editor, body: { defaults: { approvers: ['b@attack.example.com'] } } })).body;
    for (let i = 0; i < 50; i++) {
      const e = (await c.http('GET', '/v1/audit/?action=policy.updated', { token: o.admin })).body.entries?.[0];
      if (e)
        return e.actorLabel === 'ed@attack.example.com' && e.details?.after?.contentHash === v2.contentHash
          ? held(`policy.updated by ${e.actorLabel}, v${e.details.before.version} → v${e.details.after.version}`)
          : broke(JSON.stringify(e));
      await new Promise((r) => setTimeout(r, 200));
    }
    return broke('no policy.updated entry after 10 s');
  },

  async 'a reviewer reads decisions not naming them, or the console'(c) {
    const o = await c.org('reviewer');
    const theirs = (
      await c.http('POST', '/v1/worker/decisions', { token: o.apiKey, body: { externalRunId: 'r', stepRef: 's', approvers: ['someone@attack.example.com'] } })
    ).body.decisionId;
    const rita = o.as('rita@attack.example.com', 'reviewer');
    const get = await c.http('GET', `/v1/decisions/${theirs}`, { token: rita });
    const list = await c.http('GET', '/v1/decisions/', { token: rita });
    const policies = await c.http('GET', '/v1/policies/', { token: rita });
    if (get.status !== 404 || list.body?.total !== 0 || policies.status !== 403)
      return broke(`get ${show(get)}, list total ${list.body?.total}, policies ${show(policies)}`);
    return held("another's decision 404, the list empty, policies 403");
  },

  async 'a token claiming admin outranks the member list; a removed member keeps acting'(c) {
    const o = await c.org('members');
    const eve = (await c.http('POST', '/v1/members/', { token: o.admin, body: { email: 'eve@attack.example.com', role: 'member' } })).body;
    const forged = o.as('eve@attack.example.com', 'admin');
    const keys = await c.http('GET', '/v1/api-keys/', { token: forged });
    await c.http('DELETE', `/v1/members/${eve.id}`, { token: o.admin });
    const after = await c.http('GET', '/v1/policies/', { token: forged });
    const last = (await c.http('GET', '/v1/members/', { token: o.admin })).body.members.find(
      (m: { role: string; status: string }) => m.role === 'admin' && m.status === 'active',
    );
    const demote = await c.http('PATCH', `/v1/members/${last.id}`, { token: o.admin, body: { role: 'member' } });
    if (keys.status !== 403 || after.status !== 401 || demote.status !== 409)
      return broke(`keys ${show(keys)}, after removal ${show(after)}, last admin demoted ${show(demote)}`);
    return held('claimed admin: 403; removed: 401 at once; last admin: 409 last_admin');
  },

  async "a member installs or replaces the org's chat workspace"(c) {
    const o = await c.org('install');
    const member = o.as('mallory@attack.example.com', 'member');
    for (const p of ['chatA', 'chatB']) {
      const r = await c.http('GET', `/v1/integrations/${p}`, { token: member });
      if (r.body?.installUrl) return broke(`a member got ${p}'s installUrl`);
    }
    const admin = await c.http('GET', '/v1/integrations/chatA', { token: o.admin });
    if (!admin.body?.installUrl) return held('members get no installUrl (Slack is not configured here: the callback was not tried)');
    // The victim's browser has no binding cookie: the callback refuses the state.
    const state = new URL(admin.body.installUrl).searchParams.get('state')!;
    const cb = await c.http('GET', `/v1/integrations/chatA/callback?code=attacker-code&state=${encodeURIComponent(state)}`);
    return cb.status === 400
      ? held('members get no installUrl; a callback from another browser: 400')
      : broke(`the callback from another browser answered ${cb.status}`);
  },

  async "approvers outside the org's domains are mailed through an API key"(c) {
    const o = await c.org('domains');
    await c.http('PUT', '/v1/settings/approvers', { token: o.admin, body: { allowedApproverDomains: ['attack.example.com'] } });
    const r = await c.http('POST', '/v1/worker/decisions', {
      token: o.apiKey,
      body: { externalRunId: 'r', stepRef: 's', approvers: ['victim@elsewhere.example.org'] },
    });
    const list = (await c.http('GET', '/v1/worker/decisions', { token: o.apiKey })).body.decisions;
    if (r.status !== 422 || r.body?.error !== 'approver_domain_not_allowed' || list.length !== 0) return broke(`${show(r)}, ${list.length} decision(s)`);
    return held('422 approver_domain_not_allowed, no decision');
  },

  async 'a tenant URL reaches this host through an IPv6 form of 127.0.0.1'(c) {
    const o = await c.org('ssrf');
    const forms = ['http://[::127.0.0.1]:1/', 'http://[::ffff:127.0.0.1]:1/', 'http://[::ffff:7f00:1]:1/', 'http://[64:ff9b::7f00:1]:1/'];
    for (const url of forms) {
      const r = await c.http('PUT', '/v1/settings/engines', { token: o.admin, body: { bundled: { url } } });
      if (r.status < 400 || r.status >= 500) return broke(`${url}: ${show(r)}`);
    }
    return held(`${forms.length} forms refused (4xx)`);
  },

  async "a context pattern known to backtrack is judged by the machine's speed"(c) {
    const o = await c.org('redos');
    const r = await c.http('POST', '/v1/policies/', {
      token: o.admin,
      body: {
        key: 'redos',
        name: 'r',
        defaults: { approvers: ['a@attack.example.com'] },
        contextSchema: { type: 'object', properties: { v: { type: 'string', pattern: '^(a+)+$' } } },
      },
    });
    return r.status === 400 && JSON.stringify(r.body).includes('(a+)+') ? held('400 naming the pattern, before anything is timed') : broke(show(r));
  },

  async "a service's NATS credentials administer JetStream"(c) {
    if (!c.t.nats) return na('no NATS credentials given');
    const refused: string[] = [];
    for (const name of SERVICE_NAMES) {
      const u = c.t.nats.users[name];
      const bus = await Bus.connect({
        url: c.t.nats.url,
        name: `attack-${name}`,
        log: createLogger('attack', 'silent'),
        auth: { user: u.user, pass: u.password },
      });
      try {
        const jsm = await bus.jsm();
        const other = Object.keys(DURABLE_SUBJECT).find((d) => !d.startsWith(`${name}-`))!;
        const tries: Array<[string, () => Promise<unknown>]> = [
          ['update EVENTS', () => jsm.streams.update(STREAM_EVENTS, { max_msgs: 1 })],
          ['purge EVENTS', () => jsm.streams.purge(STREAM_EVENTS)],
          ['delete EVENTS', () => jsm.streams.delete(STREAM_EVENTS)],
          [
            `re-filter ${other} to evt.>`,
            () => jsm.consumers.add(STREAM_EVENTS, { durable_name: other, filter_subject: 'evt.>', ack_policy: AckPolicy.Explicit }),
          ],
          [`delete ${other}`, () => jsm.consumers.delete(STREAM_EVENTS, other)],
          ['purge the large-body bucket', () => jsm.streams.purge(LARGE_BUCKET_STREAM)],
          ['delete the large-body bucket', () => jsm.streams.delete(LARGE_BUCKET_STREAM)],
        ];
        for (const [what, attempt] of tries) {
          const err = await attempt().then(
            () => undefined,
            (e: Error & { cause?: Error }) => `${e.message} ${e.cause?.message ?? ''}`,
          );
          if (!err || !/Permissions Violation/.test(err)) return broke(`${name}: ${what} was not refused (${err ?? 'done'})`);
          refused.push(`${name}:${what}`);
        }
      } finally {
        await bus.close();
      }
    }
    return held(`${refused.length} operations refused with a permissions violation (${SERVICE_NAMES.length} services × 7)`);
  },
};

/** Runs every attack; one that throws did not hold (its error is the detail). */
export async function runAttacks(t: AttackTarget, only?: RegExp): Promise<Finding[]> {
  const base = t.baseUrl.replace(/\/$/, '');
  const http: AttackContext['http'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
      redirect: 'manual',
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let body: any = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* a page, not JSON */
    }
    return { status: res.status, body, headers: res.headers };
  };
  const run = randomBytes(3).toString('hex');
  const ctx: AttackContext = {
    t,
    http,
    async org(label) {
      const org = `attack-${label}-${run}`;
      const adminEmail = `admin@${org}.attack.example.com`;
      const as = (email: string, role: 'admin' | 'editor' | 'member' | 'reviewer') =>
        signSessionToken(t.jwtSecret, { sub: `usr_${email}`, email, org, role }, 600);
      const admin = as(adminEmail, 'admin');
      const key = await http('POST', '/v1/api-keys/', { token: admin, body: { name: 'attack', roles: ['decisions:write', 'policies:write'] } });
      if (key.status !== 201) throw new Error(`could not make an API key in ${org}: ${show(key)}`);
      return { org, admin, adminEmail, apiKey: key.body.key, as };
    },
  };
  const findings: Finding[] = [];
  for (const [attack, check] of Object.entries(ATTACKS)) {
    if (only && !only.test(attack)) continue;
    try {
      findings.push({ attack, ...(await check(ctx)) });
    } catch (err) {
      findings.push({ attack, held: false, detail: `failed: ${(err as Error).message}` });
    }
  }
  return findings;
}

export async function main(args: string[]): Promise<number> {
  const i = args.indexOf('--base-url');
  const rt = readRuntime();
  const baseUrl = (i >= 0 ? args[i + 1] : undefined) ?? process.env.PUBLIC_BASE_URL ?? rt?.baseUrl;
  if (!baseUrl) throw new Error('no running system: start it with `npm start`, or pass --base-url');
  const natsUrl = process.env.NATS_URL ?? rt?.natsUrl;
  const findings = await runAttacks({
    baseUrl,
    jwtSecret: process.env.AUTH_JWT_SECRET ?? localJwtSecret(),
    ...(natsUrl ? { nats: { url: natsUrl, users: localNatsUsers() } } : {}),
  });
  const mark = (f: Finding) => (f.held === true ? 'held   ' : f.held === false ? 'BROKE  ' : 'n/a    ');
  for (const f of findings) process.stdout.write(`${mark(f)} ${f.attack}: ${f.detail}\n`);
  const broken = findings.filter((f) => f.held === false).length;
  process.stdout.write(
    `\n${findings.filter((f) => f.held).length} held, ${broken} broke, ${findings.filter((f) => f.held === null).length} not applicable (${baseUrl})\n`,
  );
  return broken === 0 ? 0 : 1;
}
