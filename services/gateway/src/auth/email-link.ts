import { createHash, randomBytes } from 'node:crypto';
import { AppError, ApproversEndpoints, NotifierEndpoints, newId, type Bus, type Clock, type Logger, type SecretBox, type UserRole } from '@approvals/shared';
import type { MemberRole, MembersStore } from '../store/members.store';
import type { NewSignInLink, SignInStore } from '../store/sign-in.store';
import { signSessionToken } from './jwt';

/** How long a sign-in link works (proof-and-reach.md section 4). */
export const EMAIL_LINK_TTL_MS = 15 * 60_000;
/** The window the request limits count in, and the limits: per email, and per address. */
export const EMAIL_LINK_WINDOW_MS = 15 * 60_000;
export const EMAIL_LINK_PER_EMAIL = 5;
export const EMAIL_LINK_PER_IP = 30;

/** What a redeemed link gives: a session of the org, as the person (their role there). */
export interface Redeemed {
  sessionToken: string;
  org: string;
  email: string;
  role: UserRole;
}

const hashOf = (code: string) => createHash('sha256').update(code, 'utf8').digest('hex');

/**
 * A return path the app may go to after sign-in: a relative path inside the app, never
 * another origin (`//evil.example`, `/\evil`, a scheme) — so a link cannot be made to
 * land the person somewhere else.
 */
export function safeNext(next: string | undefined | null): string | null {
  if (!next || next.length > 500) return null;
  if (!next.startsWith('/app/') || next.startsWith('//') || /[\\\s]/.test(next)) return null;
  return next;
}

/**
 * Sign-in by email link (docs/access.md): a person who is a member or an approver of an
 * org asks for a link by email, gets one single-use link per org they belong to (valid 15
 * minutes), and the link becomes a session of that org. Known and unknown addresses get
 * the same answer after the same work (the limits are counted, the orgs looked up, the
 * notifier asked, with no link for an unknown address), so the answer tells nobody who
 * has an account. Member invitations mail the same kind of link.
 */
export function createEmailLinks(deps: {
  store: SignInStore;
  members: MembersStore;
  bus: Bus;
  secrets: SecretBox;
  clock: Clock;
  publicBaseUrl: string;
  jwtSecret: string;
  sessionMaxAgeSec: number;
  log: Logger;
}) {
  const base = deps.publicBaseUrl.replace(/\/+$/, '');

  /** A new link for (org, email, role): its row, and the sealed mail the notifier sends. */
  function mint(org: string, email: string, role: UserRole, purpose: 'sign_in' | 'invitation', next: string | null, now: Date) {
    const code = randomBytes(32).toString('base64url');
    const id = newId('token');
    const expiresAt = new Date(now.getTime() + EMAIL_LINK_TTL_MS);
    const url = `${base}/app/login?code=${code}${next ? `&next=${encodeURIComponent(next)}` : ''}`;
    const row: NewSignInLink = { id, codeHash: hashOf(code), org, email, role, purpose, expiresAt };
    const mail = { id, org, role, purpose, linkSealed: deps.secrets.seal(url, `sign-in-link:${id}`), expiresAt: expiresAt.toISOString() };
    return { row, mail };
  }

  /** The orgs where the address is an enabled registered approver; none when the policies service cannot say (members and known approvers still get their links). */
  const registeredOrgsOf = async (email: string): Promise<string[]> => {
    try {
      return (await deps.bus.call(ApproversEndpoints.orgsOf, { email })).orgs;
    } catch (err) {
      deps.log.warn({ err }, 'could not ask the policies service which orgs an address approves for; links for the orgs known here only');
      return [];
    }
  };

  return {
    /**
     * `POST /v1/auth/email-link`: counted against the limits (5 per email, 30 per address,
     * per quarter hour; 429 with Retry-After past them), then one link per org the email
     * belongs to: a member's role, or `reviewer` for an approver who is no member.
     */
    async request(input: { email: string; ip: string; next?: string | null }): Promise<void> {
      const email = input.email.toLowerCase();
      const now = deps.clock.now();
      const wait = await deps.store.take(
        [
          { key: `email:${email}`, max: EMAIL_LINK_PER_EMAIL },
          { key: `ip:${input.ip}`, max: EMAIL_LINK_PER_IP },
        ],
        EMAIL_LINK_WINDOW_MS,
        now,
      );
      if (wait > 0) throw new AppError('rate_limited', 'too many sign-in links asked for: wait before asking again', { retryAfter: wait });
      const [{ members, approverOf }, registered] = await Promise.all([deps.store.orgsOf(email), registeredOrgsOf(email)]);
      // The policies service's records are the truth about registered approvers: one the
      // events never told us of (registered before this release, or its event missed) is
      // learnt here, so the link they are sent also opens.
      const learnt = registered.filter((org) => !approverOf.includes(org));
      if (learnt.length) await deps.store.applyReach({ add: learnt.map((org) => ({ org, email })), remove: [] });
      const roles = new Map<string, UserRole>([...approverOf, ...learnt].map((org) => [org, 'reviewer']));
      for (const m of members) roles.set(m.org, m.role);
      const next = safeNext(input.next);
      const minted = [...roles].map(([org, role]) => mint(org, email, role, 'sign_in', next, now));
      await deps.store.createLinks(
        minted.map((m) => m.row),
        now,
      );
      await deps.bus.call(NotifierEndpoints.signInMail, { email, links: minted.map((m) => m.mail) });
    },

    /** A member invitation's link (`POST /v1/members/`): mailed with the invitation. */
    async invite(input: { org: string; email: string; role: MemberRole; invitedBy: string }): Promise<void> {
      const now = deps.clock.now();
      const m = mint(input.org, input.email.toLowerCase(), input.role, 'invitation', null, now);
      await deps.store.createLinks([m.row], now);
      await deps.bus.call(NotifierEndpoints.signInMail, { email: m.row.email, links: [{ ...m.mail, invitedBy: input.invitedBy }] });
    },

    /**
     * `POST /v1/auth/email-link/redeem`: the code's link is used (once: of concurrent
     * redeems exactly one wins) and becomes a session. The role is the person's at this
     * moment: a member's role, else `reviewer` while they are an approver of the org; someone
     * who is neither any more gets nothing. Used, expired, unknown: 401 `invalid_code`.
     */
    async redeem(code: string): Promise<Redeemed> {
      const invalid = () => new AppError('invalid_code', 'this sign-in link was used already, has expired, or is not valid: ask for a new one');
      const row = await deps.store.redeem(hashOf(code), deps.clock.now());
      if (!row) throw invalid();
      const member = await deps.members.find(row.org_id, row.email);
      let role: UserRole;
      if (member?.status === 'active') role = member.role;
      else if (await deps.store.isApprover(row.org_id, row.email)) role = 'reviewer';
      else throw invalid();
      const sub = await deps.store.userIdFor(row.org_id, row.email);
      const sessionToken = signSessionToken(deps.jwtSecret, { sub, email: row.email, org: row.org_id, role }, deps.sessionMaxAgeSec);
      return { sessionToken, org: row.org_id, email: row.email, role };
    },
  };
}
export type EmailLinks = ReturnType<typeof createEmailLinks>;
