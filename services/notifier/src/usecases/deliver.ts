import { DecisionsEndpoints, type Bus, type PeekView, type SecretBox } from '@approvals/shared';
import type { ChannelProvider, DeliveryRow, EngineMessage, OutgoingMessage, PersonMessage, SendResult } from '../providers/provider';
import { renderAccountNotice, renderChatNotice, renderEmail, renderPhone, renderPush, renderSms, renderWebhook, type NoticeKind } from '../templates/messages';
import { renderSignInMail } from '../templates/sign-in';
import { createLinkMinter } from './links';

export interface DeliverDeps {
  bus: Bus;
  providers: ChannelProvider[];
  /** Where "Open in app" points: `${appBaseUrl}/app/decisions/{id}`. */
  appBaseUrl: string;
  /** Opens the sealed sign-in links (`sign_in` deliveries). */
  secrets: SecretBox;
}

/** The approver a delivery is for (planned with the row), else its address. */
function approverOf(row: DeliveryRow): string {
  const a = (row.payload as { approver?: unknown }).approver;
  return typeof a === 'string' ? a : row.target;
}

/**
 * One delivery: pick the channel's provider, fetch the decision once, decide skip or
 * send, render the channel's message from the template module, hand it to the provider.
 * The rules it reads (is the decision still open, can a link answer it) are decisions'
 * answers on the view, not decided again here.
 */
export function createDeliver(deps: DeliverDeps) {
  const providers = new Map(deps.providers.map((p) => [p.channel, p]));
  /**
   * The decision as it is now, one question for the notices that ask at the same moment:
   * a decision's notices to its approvers are planned together and sent at once, and a
   * peek asked while another for the same decision is on its way shares its answer (no
   * older: nothing is kept once it is answered).
   */
  const peeking = new Map<string, Promise<PeekView>>();
  const peek = (org: string, id: string): Promise<PeekView> => {
    const key = `${org}\u0000${id}`;
    let p = peeking.get(key);
    if (p === undefined) {
      p = deps.bus.call(DecisionsEndpoints.peek, { org, id }).finally(() => peeking.delete(key));
      peeking.set(key, p);
    }
    return p;
  };
  const mintLinks = createLinkMinter(deps.bus);
  const appUrl = (id: string) => `${deps.appBaseUrl}/app/decisions/${encodeURIComponent(id)}`;

  /** A notice to a person, as the channel sends it. */
  async function personMessage(row: DeliveryRow, d: PeekView): Promise<PersonMessage> {
    const kind = row.kind as NoticeKind;
    switch (row.channel) {
      case 'email': {
        let links: Record<string, string> | undefined;
        // A link votes as the approver: it only goes to the approver's own address. Another
        // mailbox (an email channel any org member may set) gets "open in app", where the
        // vote needs a session as the approver.
        if (d.answerableByLink && row.target.toLowerCase() === approverOf(row)) {
          links = await mintLinks({ org: row.org_id, decisionId: d.id, approverEmail: approverOf(row), expiresAt: d.expiresAt });
        }
        const mail = renderEmail({ d, kind, links, appUrl: appUrl(d.id) });
        // The headers let mail clients and our own tests tell retries of one delivery apart from new mail.
        return { channel: 'email', to: row.target, id: row.id, ...mail, headers: { 'X-Approvals-Delivery': row.id, 'X-Approvals-Decision': d.id } };
      }
      case 'webhook':
        return { channel: 'webhook', to: row.target, id: row.id, body: renderWebhook(d, kind) };
      case 'sms':
        return { channel: 'sms', to: row.target, body: renderSms(d, appUrl(d.id)), idempotencyKey: row.id };
      case 'phone':
        return { channel: 'phone', to: row.target, message: renderPhone(d), idempotencyKey: row.id };
      case 'push':
        return { channel: 'push', to: row.target, content: renderPush(d, kind, appUrl(d.id)) };
      case 'chatA':
      case 'chatB':
        return {
          channel: row.channel,
          to: row.target,
          org: row.org_id,
          deliveryId: row.id,
          decisionId: d.id,
          approverEmail: approverOf(row),
          notice: renderChatNotice(d, kind, appUrl(d.id)),
        };
      default:
        throw new Error(`no template for channel ${row.channel}`);
    }
  }

  /** Why a channel cannot send at all for an org right now (not configured), or null. */
  const unavailable = async (channel: string, org: string): Promise<string | null> => {
    const p = providers.get(channel);
    return p ? p.unavailable(org) : `no provider for channel ${channel}`;
  };

  const deliver = async function deliver(row: DeliveryRow): Promise<SendResult> {
    const provider = providers.get(row.channel);
    if (!provider) return { status: 'skipped', reason: `no provider for channel ${row.channel}` };
    // An engine's provider finds out as it resolves the target (one lookup, not two).
    const unavailable = provider.audience === 'engine' ? null : await provider.unavailable(row.org_id);
    if (unavailable) return { status: 'skipped', reason: unavailable };
    let message: OutgoingMessage;
    if (row.kind === 'account') {
      // About the approver's own record, not a decision: the mail is the event's.
      const p = row.payload as {
        what: string;
        actorLabel: string | null;
        before: { endpoint: string | null; status: string } | null;
        after: { endpoint: string | null; status: string } | null;
      };
      const mail = renderAccountNotice({ org: row.org_id, ...p, appUrl: `${deps.appBaseUrl}/app/me` });
      message = { channel: 'email', to: row.target, id: row.id, ...mail, headers: { 'X-Approvals-Delivery': row.id } };
    } else if (row.kind === 'sign_in') {
      // A sign-in link, sealed by the gateway: opened only now, and never sent once expired
      // (a retry after its 15 minutes would mail a dead link).
      const p = row.payload as {
        org: string;
        role: string;
        purpose: 'sign_in' | 'invitation';
        linkSealed: string;
        expiresAt: string;
        invitedBy?: string | null;
      };
      const expiresAt = new Date(p.expiresAt);
      if (expiresAt.getTime() <= Date.now()) return { status: 'skipped', reason: 'the sign-in link expired before it could be sent' };
      const link = deps.secrets.open(p.linkSealed, `sign-in-link:${row.decision_id}`);
      const mail = renderSignInMail({ org: p.org, role: p.role, purpose: p.purpose, link, expiresAt, invitedBy: p.invitedBy });
      message = { channel: 'email', to: row.target, id: row.id, ...mail, headers: { 'X-Approvals-Delivery': row.id } };
    } else if (provider.audience === 'engine') {
      const kind = row.kind === 'run' || row.kind === 'callback' ? row.kind : 'resume';
      message = { org: row.org_id, kind, eventId: row.event_id, payload: row.payload } satisfies EngineMessage;
    } else {
      // Fresh, so a notice never shows stale state; a decision no longer open gets none.
      const d = await peek(row.org_id, row.decision_id);
      if (d.status !== 'PENDING') return { status: 'skipped', reason: `decision is ${d.status}` };
      message = await personMessage(row, d);
    }
    return provider.send(message);
  };
  return Object.assign(deliver, { unavailable });
}
export type Deliver = ReturnType<typeof createDeliver>;
