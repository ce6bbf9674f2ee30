import {
  AppError,
  DecisionsEndpoints,
  type Bus,
  type Clock,
  type DecisionView,
  type MintLinksRequest,
  type Logger,
  type PeekView,
  type RawCallback,
  type RawHttpReply,
} from '@approvals/shared';
import { signToken, newTokenId, tokenState, verifyToken } from '../domain/link-tokens';
import type { ActionTokenRow, TokenStore } from '../store/action-tokens.store';
import * as pages from '../templates/pages';
import type { CallbackRoute } from './callback.handler';

export const EMAIL_ACT_PATH = '/v1/surfaces/email/act';
/** Links of a decision without a deadline. */
export const NO_EXPIRY_LINK_TTL_MS = 30 * 24 * 3600 * 1000;
/** How long a vote may take before the page says "try again" (and the claim is given back). */
export const VOTE_TIMEOUT_MS = 15_000;
const PEEK_TIMEOUT_MS = 5_000;

export interface EmailLinkDeps {
  store: TokenStore;
  bus: Bus;
  clock: Clock;
  log: Logger;
  /** Signs new links. */
  secret: string;
  /** Also accepted when checking a link (a rotation in progress). */
  previousSecrets?: readonly string[];
  publicBaseUrl: string;
  /** Where the web app is served: the pages' "Open in app" (`{appBaseUrl}/app/decisions/{id}`). */
  appBaseUrl?: string;
}

/**
 * svc.surfaces.mint_links: one token row per approver and action, one link per action;
 * the approvers asked together (`approverEmail` and `moreApprovers`) in one statement.
 */
export function createMintLinksHandler(deps: Pick<EmailLinkDeps, 'store' | 'clock' | 'secret' | 'publicBaseUrl'>) {
  const base = deps.publicBaseUrl.replace(/\/+$/, '');
  return async (req: MintLinksRequest) => {
    const now = deps.clock.now();
    const emailOf = (given: string, path: string) => {
      const email = given.trim().toLowerCase();
      if (!email) throw new AppError('invalid_request', `${path} is empty`, { issues: [{ path, message: 'required' }] });
      return email;
    };
    const first = emailOf(req.approverEmail, 'approverEmail');
    const more = (req.moreApprovers ?? []).map((e, i) => [e, emailOf(e, `moreApprovers.${i}`)] as const);
    if (!req.org || !req.decisionId) throw new AppError('invalid_request', 'org and decisionId are required');
    let expiresAt: Date;
    if (req.expiresAt === null) expiresAt = new Date(now.getTime() + NO_EXPIRY_LINK_TTL_MS);
    else {
      const t = Date.parse(req.expiresAt);
      if (Number.isNaN(t)) throw new AppError('invalid_request', 'expiresAt is not a date', { issues: [{ path: 'expiresAt', message: 'not an ISO date' }] });
      expiresAt = new Date(t);
    }
    const actions = [...new Set(req.actions)];
    const approvers = [...new Set([first, ...more.map(([, email]) => email)])];
    const rows = approvers.flatMap((email) =>
      actions.map((action) => ({
        id: newTokenId(),
        org_id: req.org,
        decision_id: req.decisionId,
        approver_email: email,
        action,
        expires_at: expiresAt,
        created_at: now,
      })),
    );
    await deps.store.insert(rows);
    const linksOf = (email: string) => {
      const links: Record<string, string> = {};
      for (const r of rows)
        if (r.approver_email === email) links[r.action] = `${base}${EMAIL_ACT_PATH}?token=${encodeURIComponent(signToken(deps.secret, r.id))}`;
      return links;
    };
    if (more.length === 0) return { links: linksOf(first) };
    // Keyed as asked: the caller finds each approver's links under the address it sent.
    return { links: linksOf(first), byApprover: Object.fromEntries(more.map(([asked, email]) => [asked, linksOf(email)])) };
  };
}

type TokenFrom = { ok: true; token: string; note: string } | { ok: false };

/**
 * The token from the query and (for POST) an urlencoded form body; both must agree. The
 * form's `note` (the reason, trimmed, at most NOTE_MAX characters) comes with it.
 */
function tokenFrom(req: RawCallback, readBody: boolean): TokenFrom {
  const found = new Set<string>();
  let note = '';
  const q = req.query.token;
  for (const v of Array.isArray(q) ? q : q === undefined ? [] : [q]) if (typeof v === 'string') found.add(v);
  if (readBody && req.bodyBase64) {
    const type = (req.headers['content-type'] ?? '').toLowerCase();
    if (type.startsWith('application/x-www-form-urlencoded')) {
      const form = new URLSearchParams(Buffer.from(req.bodyBase64, 'base64').toString('utf8'));
      for (const v of form.getAll('token')) found.add(v);
      // A browser sends CRLF in a textarea; the note keeps plain newlines.
      note = (form.get('note') ?? '').replace(/\r\n/g, '\n').trim().slice(0, pages.NOTE_MAX);
    }
  }
  if (found.size !== 1) return { ok: false };
  return { ok: true, token: [...found][0]!, note };
}

const isTransient = (err: unknown) => !(err instanceof AppError) || err.transient || err.code === 'internal';

/**
 * GET shows what the link would do and a confirm button; it never votes, because mail
 * scanners and link previews follow GET links. POST spends the token and votes.
 */
export function createEmailActRoutes(deps: EmailLinkDeps): { get: CallbackRoute; post: CallbackRoute } {
  const { store, bus, clock, log, secret } = deps;
  const appBase = (deps.appBaseUrl ?? deps.publicBaseUrl).replace(/\/+$/, '');
  const appUrlOf = (decisionId: string) => `${appBase}/app/decisions/${encodeURIComponent(decisionId)}`;

  /** Signature, then row. Undefined means "not a valid link" (400). */
  async function load(token: string): Promise<ActionTokenRow | undefined> {
    const check = verifyToken([secret, ...(deps.previousSecrets ?? [])], token);
    if (!check.ok) {
      log.info({ reason: check.reason }, 'email action link refused');
      return undefined;
    }
    const row = await store.find(check.id);
    if (!row) log.warn({ tokenId: check.id }, 'email action link with a valid signature and no row');
    return row;
  }

  /** The decision as decisions reads it, with whether the link's person can answer it now (`you`). */
  const peek = (row: ActionTokenRow, timeoutMs = PEEK_TIMEOUT_MS) =>
    bus.call(DecisionsEndpoints.peek, { org: row.org_id, id: row.decision_id, person: row.approver_email }, { timeoutMs });

  async function show(req: RawCallback): Promise<RawHttpReply> {
    const from = tokenFrom(req, false);
    if (!from.ok) return pages.invalidLinkPage();
    const row = await load(from.token);
    if (!row) return pages.invalidLinkPage();
    const now = clock.now();
    const state = tokenState(row, now);
    if (state === 'used') return pages.usedPage(row.used_result);
    if (state === 'expired') return pages.expiredPage();
    let d: PeekView;
    try {
      d = await peek(row);
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') return pages.decisionGonePage();
      throw err;
    }
    // Decisions answers whether this person can answer and what a link may do (a decision
    // past its deadline reads EXPIRED); the page only shows it.
    switch (d.you?.reason) {
      case 'not_approver':
        return pages.notApproverPage(d, row.approver_email);
      case 'already_voted':
        return pages.alreadyVotedPage(d, d.id, row.approver_email);
      case 'not_pending':
        return pages.notPendingPage(d, d.id, d.status);
      case 'signature_required':
        return pages.signatureOnlyPage(d, d.id);
    }
    if (d.linkAnswers.length === 0) return pages.signatureOnlyPage(d, d.id);
    if (!d.linkAnswers.includes(row.action)) return pages.needsAnswerPage(d, d.id, 200, appUrlOf(d.id));
    return pages.confirmPage(d, row.action, row.approver_email, from.token, { appUrl: appUrlOf(d.id) });
  }

  async function act(req: RawCallback): Promise<RawHttpReply> {
    const from = tokenFrom(req, true);
    if (!from.ok) return pages.invalidLinkPage();
    const row = await load(from.token);
    if (!row) return pages.invalidLinkPage();
    const now = clock.now();
    const claimed = await store.claim(row.id, now);
    if (!claimed) {
      const current = (await store.find(row.id)) ?? row;
      return tokenState(current, clock.now()) === 'expired' ? pages.expiredPage() : pages.usedPage(current.used_result);
    }
    const who = claimed.approver_email;
    const decisionId = claimed.decision_id;
    let outcome: { result: string; page: (d: DecisionView | null) => RawHttpReply };
    try {
      const r = await bus.call(
        DecisionsEndpoints.surfaceVote,
        { org: claimed.org_id, decisionId, voterEmail: who, surface: 'email', decision: claimed.action, ...(from.note ? { note: from.note } : {}) },
        { timeoutMs: VOTE_TIMEOUT_MS },
      );
      outcome = { result: `recorded:${r.status}`, page: (d) => pages.recordedPage(d, decisionId, claimed.action, who, r.status, r.tally) };
    } catch (err) {
      if (isTransient(err)) {
        // Nothing definitive happened (or we cannot know): give the token back so the
        // person can retry. A vote that did land makes the retry answer "already voted".
        await store.release(claimed.id, now).catch((e) => log.error({ err: e, tokenId: claimed.id }, 'could not release an email link claim'));
        log.warn({ err, tokenId: claimed.id, decisionId }, 'email link vote failed; claim released');
        return pages.tryAgainPage({ token: from.token, action: claimed.action, note: from.note });
      }
      const e = err as AppError;
      if (e.code === 'note_required') {
        // The policy insists on a reason: the link stays unspent and the form comes back.
        await store.release(claimed.id, now).catch((x) => log.error({ err: x, tokenId: claimed.id }, 'could not release an email link claim'));
        const d = await peek(claimed, 3_000).catch(() => null);
        return d
          ? pages.confirmPage(d, claimed.action, who, from.token, { note: from.note, missingNote: true, appUrl: appUrlOf(d.id) })
          : pages.tryAgainPage(null);
      }
      switch (e.code) {
        case 'not_an_approver':
          outcome = { result: 'not_an_approver', page: (d) => pages.refusedNotApproverPage(d, decisionId, who) };
          break;
        case 'already_voted':
          outcome = {
            result: 'already_voted',
            page: (d) => pages.alreadyVotedPage(d, decisionId, who, e.details.vote as { choice?: unknown; surface?: unknown } | undefined),
          };
          break;
        case 'not_pending': {
          const status = typeof e.details.status === 'string' ? e.details.status : 'closed';
          outcome = { result: `not_pending:${status}`, page: (d) => pages.notPendingPage(d, decisionId, status, 409) };
          break;
        }
        case 'signature_required':
          outcome = { result: 'signature_required', page: (d) => pages.signatureOnlyPage(d, decisionId, 409) };
          break;
        case 'not_found':
          outcome = { result: 'decision_gone', page: () => pages.decisionGonePage() };
          break;
        case 'invalid_request':
          outcome = { result: 'needs_answer', page: (d) => pages.needsAnswerPage(d, decisionId, 409, appUrlOf(decisionId)) };
          break;
        default:
          // A definitive refusal this page has no words for: keep the token spent, say so plainly.
          outcome = { result: `refused:${e.code}`, page: () => pages.usedPage(null) };
      }
    }
    await store.settle(claimed.id, now, outcome.result).catch((e) => log.error({ err: e, tokenId: claimed.id }, 'could not store an email link result'));
    log.info({ tokenId: claimed.id, decisionId, result: outcome.result }, 'email action link used');
    // The decision's title for the result page; the vote is done, so a failure here only costs the title.
    const d = outcome.result === 'decision_gone' ? null : await peek(claimed, 3_000).catch(() => null);
    return outcome.page(d);
  }

  /** A failure of our own (database, bus) is a page that says "try again", never a JSON 500. */
  const guard =
    (fn: (req: RawCallback) => Promise<RawHttpReply>): CallbackRoute =>
    async (req) => {
      try {
        return await fn(req);
      } catch (err) {
        log.error({ err, route: req.route }, 'email action link failed');
        return pages.tryAgainPage(null);
      }
    };

  return { get: guard(show), post: guard(act) };
}
