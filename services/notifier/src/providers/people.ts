import nodemailer, { type Transporter } from 'nodemailer';
import { SurfacesEndpoints, escapeHtml, type Bus, type DecisionView } from '@approvals/shared';
import type { NotifierConfig } from '../config';
import { postJson, type ChannelProvider, type DeliveryRow, type Outbound } from './provider';
import { signStandardWebhook } from './standard-webhooks';

const esc = escapeHtml;

interface Ctx {
  title: string | null;
  prompt: string | null;
  blocks: Array<Record<string, unknown>>;
}

function contextOf(d: DecisionView): Ctx {
  const c = (d.context ?? {}) as { title?: string | null; prompt?: string | null; blocks?: Array<Record<string, unknown>> };
  return { title: c.title ?? null, prompt: c.prompt ?? null, blocks: c.blocks ?? [] };
}

/** One line per block: enough to decide from the mail, the app has the rest. */
export function summarizeBlock(b: Record<string, unknown>): string {
  const head = b.title ? `${b.title}: ` : '';
  const cut = (s: unknown, n = 300) => {
    const t = String(s ?? '');
    return t.length > n ? `${t.slice(0, n)}…` : t;
  };
  switch (b.kind) {
    case 'text':
      return head + cut(b.text);
    case 'fields':
      return head + (b.fields as Array<{ label: string; value: string }>).map((f) => `${f.label}: ${cut(f.value, 100)}`).join('; ');
    case 'tool_call':
      return `${head}tool ${b.tool} ${cut(JSON.stringify(b.args), 200)}`;
    case 'diff':
      return `${head}change: ${cut(b.before, 120)} → ${cut(b.after, 120)}`;
    case 'ai_output':
      return `${head}${b.model ? `${b.model}: ` : ''}${cut(b.output)}`;
    default:
      return head;
  }
}

/** Yes/no decisions can be answered from the mail; anything richer opens the app. */
/**
 * Yes/no decisions are answered from the mail. Anything richer opens the app (spec):
 * a choice or typed answer, a signature, and a draft (proposedOutput), which is what
 * gets approved and is shown and refined there, not in the mail.
 */
export function answerableByLink(d: DecisionView): boolean {
  const spec = d.responseSpec as { type?: string } | null;
  return !d.requiresSignature && (!spec || spec.type === 'approval') && d.proposedOutput == null;
}

export function renderEmail(args: { d: DecisionView; kind: DeliveryRow['kind']; links?: Record<string, string>; appUrl: string }) {
  const { d, kind, links, appUrl } = args;
  const c = contextOf(d);
  const title = c.title ?? `Decision ${d.id}`;
  const prefix = kind === 'remind' ? 'Reminder: ' : kind === 'escalate' ? 'Still waiting: ' : 'Approval needed: ';
  const subject = `${prefix}${title}`.slice(0, 250);
  const lines = c.blocks.map(summarizeBlock).filter(Boolean);
  const esign = d.esign as { documentUrl?: string; envelopeId?: string } | null;
  const expires = d.expiresAt ? `This request expires at ${d.expiresAt}.` : '';
  const text = [
    title,
    c.prompt ?? '',
    ...lines.map((l) => `- ${l}`),
    '',
    d.requiresSignature ? `This decision is made by signing the document${esign?.documentUrl ? `: ${esign.documentUrl}` : ''}.` : '',
    links?.approve ? `Approve: ${links.approve}` : '',
    links?.reject ? `Reject: ${links.reject}` : '',
    `Open in the app: ${appUrl}`,
    expires,
  ]
    .filter((l) => l !== '')
    .join('\n');
  const button = (href: string, label: string, color: string) =>
    `<a href="${esc(href)}" style="display:inline-block;padding:10px 18px;margin-right:8px;border-radius:6px;background:${color};color:#fff;text-decoration:none;font-weight:600">${esc(label)}</a>`;
  const html = `<!doctype html><html><body style="font:15px/1.5 system-ui,sans-serif;color:#1d1d1f;max-width:640px">
<h2 style="margin:0 0 8px">${esc(title)}</h2>
${c.prompt ? `<p>${esc(c.prompt)}</p>` : ''}
${lines.length ? `<ul>${lines.map((l) => `<li>${esc(l)}</li>`).join('')}</ul>` : ''}
${d.requiresSignature ? `<p>This decision is made by signing the document${esign?.documentUrl ? `: <a href="${esc(esign.documentUrl)}">open the envelope</a>` : ''}.</p>` : ''}
<p>${links?.approve ? button(links.approve, 'Approve', '#0a7a3e') : ''}${links?.reject ? button(links.reject, 'Reject', '#b42318') : ''}${button(appUrl, 'Open in app', '#1d4ed8')}</p>
${expires ? `<p style="color:#666;font-size:13px">${esc(expires)}</p>` : ''}
<p style="color:#666;font-size:12px">You receive this because you are an approver of this decision.</p>
</body></html>`;
  return { subject, text, html };
}

/** The approver a delivery is for (planned with the row), else its address. */
function approverOf(row: DeliveryRow): string {
  const a = (row.payload as { approver?: unknown }).approver;
  return typeof a === 'string' ? a : row.target;
}

export function peopleProviders(config: NotifierConfig, deps: { bus: Bus; outbound: Outbound }): ChannelProvider[] {
  let transport: Transporter | undefined;
  const mailer = () => (transport ??= nodemailer.createTransport(config.SMTP_URL!));
  const appUrl = (d: DecisionView) => `${config.APP_BASE_URL ?? config.PUBLIC_BASE_URL}/app/decisions/${encodeURIComponent(d.id)}`;

  return [
    {
      channel: 'email',
      async send(row, ctx) {
        if (!config.SMTP_URL) return { status: 'skipped', reason: 'SMTP_URL is not configured' };
        const d = await ctx.decision();
        if (d.status !== 'PENDING') return { status: 'skipped', reason: `decision is ${d.status}` };
        let links: Record<string, string> | undefined;
        // A link votes as the approver: it only goes to the approver's own address. Another
        // mailbox (an email channel any org member may set) gets "open in app", where the
        // vote needs a session as the approver.
        if (answerableByLink(d) && row.target.toLowerCase() === approverOf(row)) {
          links = (
            await deps.bus.call(SurfacesEndpoints.mintLinks, { org: row.org_id, decisionId: d.id, approverEmail: approverOf(row), actions: ['approve', 'reject'], expiresAt: d.expiresAt })
          ).links;
        }
        const mail = renderEmail({ d, kind: row.kind, links, appUrl: appUrl(d) });
        const info = await mailer().sendMail({
          from: config.MAIL_FROM,
          to: row.target,
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
          // Lets mail clients and our own tests tell retries of one delivery apart from new mail.
          headers: { 'X-Approvals-Delivery': row.id, 'X-Approvals-Decision': d.id },
        });
        return { status: 'sent', detail: info.messageId };
      },
    },
    {
      channel: 'webhook',
      async send(row, ctx) {
        const d = await ctx.decision();
        if (d.status !== 'PENDING') return { status: 'skipped', reason: `decision is ${d.status}` };
        const body = JSON.stringify({ type: `decision.${row.kind === 'notify' ? 'created' : row.kind === 'remind' ? 'reminded' : 'escalated'}`, data: d });
        const headers = signStandardWebhook(config.WEBHOOK_SIGNING_SECRET, row.id, Math.floor(Date.now() / 1000), body);
        // An endpoint people set: the private-network guard applies, at connect time, on every attempt.
        await postJson(deps.outbound.tenant, row.target, undefined, headers, body);
        return { status: 'sent' };
      },
    },
    {
      channel: 'sms',
      async send(row, ctx) {
        if (!config.SMS_PROVIDER_URL) return { status: 'skipped', reason: 'SMS_PROVIDER_URL is not configured' };
        const d = await ctx.decision();
        if (d.status !== 'PENDING') return { status: 'skipped', reason: `decision is ${d.status}` };
        const title = contextOf(d).title ?? d.id;
        await postJson(deps.outbound.trusted, config.SMS_PROVIDER_URL, { to: row.target, body: `Approval needed: ${title}. Open ${appUrl(d)}`, idempotencyKey: row.id });
        return { status: 'sent' };
      },
    },
    {
      channel: 'phone',
      async send(row, ctx) {
        if (!config.PHONE_PROVIDER_URL) return { status: 'skipped', reason: 'PHONE_PROVIDER_URL is not configured' };
        const d = await ctx.decision();
        if (d.status !== 'PENDING') return { status: 'skipped', reason: `decision is ${d.status}` };
        await postJson(deps.outbound.trusted, config.PHONE_PROVIDER_URL, { to: row.target, message: `An approval is waiting for you: ${contextOf(d).title ?? 'a decision'}.`, idempotencyKey: row.id });
        return { status: 'sent' };
      },
    },
    // Chat adapters come with their own issue; until then the delivery says so instead of pretending.
    { channel: 'chatA', send: async () => ({ status: 'skipped', reason: 'the chatA adapter is not built yet' }) },
    { channel: 'chatB', send: async () => ({ status: 'skipped', reason: 'the chatB adapter is not built yet' }) },
  ];
}
