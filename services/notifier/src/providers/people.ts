import nodemailer, { type Transporter } from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import { ChatEndpoints, announceChange, type Bus } from '@approvals/shared';
import type { NotifierConfig } from '../config';
import type { PeopleStore } from '../store/people.store';
import type { ApnsSender, FcmSender } from './push';
import { postJson, type ChannelProvider, type Outbound, type PersonMessage } from './provider';
import { signStandardWebhook } from './standard-webhooks';

type Of<C extends PersonMessage['channel']> = Extract<PersonMessage, { channel: C }>;
const ready = () => null;

/**
 * The SMTP URL with nodemailer's pool on: connections are kept open and reused (at most
 * `maxConnections`), so a mail no longer pays for a new connection and its greeting. The
 * URL's own `pool` and `maxConnections` (nodemailer reads its options from the query) win.
 */
export function pooledSmtpUrl(smtpUrl: string, maxConnections: number): string {
  const u = new URL(smtpUrl);
  if (!u.searchParams.has('pool')) u.searchParams.set('pool', 'true');
  if (!u.searchParams.has('maxConnections')) u.searchParams.set('maxConnections', String(maxConnections));
  return u.toString();
}

/**
 * A delivery's Message-ID, `<delivery id@the sender's domain>`: the same on every retry of
 * one delivery (a receiver or a mail client that saw it already can tell), and nodemailer
 * has none to make (it would draw random bytes for each mail).
 */
export function messageIdOf(deliveryId: string, mailFrom: string): string {
  const address = /<([^>]+)>/.exec(mailFrom)?.[1] ?? mailFrom;
  const domain = address.includes('@') ? address.slice(address.lastIndexOf('@') + 1).trim() : '';
  return `<${deliveryId}@${domain || 'localhost'}>`;
}

/** The channels that reach people. Each sends the rendered message it is given, nothing more. */
export function peopleProviders(
  config: NotifierConfig,
  deps: { outbound: Outbound; bus: Bus; people: PeopleStore; push: { fcm?: FcmSender; apns?: ApnsSender }; now?: () => Date },
): ChannelProvider[] {
  let transport: Transporter | undefined;
  const mailer = () => (transport ??= nodemailer.createTransport(pooledSmtpUrl(config.SMTP_URL!, config.SMTP_MAX_CONNECTIONS)));
  const nowSec = () => Math.floor((deps.now?.() ?? new Date()).getTime() / 1000);

  const email: ChannelProvider<Of<'email'>> = {
    channel: 'email',
    audience: 'person',
    unavailable: () => (config.SMTP_URL ? null : 'SMTP_URL is not configured'),
    async send(m) {
      const mail = {
        from: config.MAIL_FROM,
        to: m.to,
        subject: m.subject,
        text: m.text,
        html: m.html,
        headers: m.headers,
        messageId: messageIdOf(m.id, config.MAIL_FROM),
        // Our templates are mostly ASCII: quoted-printable, said once, rather than nodemailer
        // counting every letter of each part to choose (about 4% of the notifier's CPU).
        textEncoding: 'quoted-printable' as const,
      };
      // The message is built in memory first (nodemailer's own composer) and handed to the
      // SMTP connection whole: streamed to the socket as it was built, a mail was many small
      // writes, a system call each (the latency phase: 20 fewer a decision of two mails).
      const raw = await new MailComposer(mail).compile().build();
      const info = await mailer().sendMail({ from: mail.from, to: mail.to, messageId: mail.messageId, raw });
      return { status: 'sent', detail: info.messageId };
    },
  };
  const webhook: ChannelProvider<Of<'webhook'>> = {
    channel: 'webhook',
    audience: 'person',
    unavailable: ready,
    async send(m) {
      const headers = signStandardWebhook(config.WEBHOOK_SIGNING_SECRET, m.id, nowSec(), m.body);
      // An endpoint people set: the private-network guard applies, at connect time, on every attempt.
      await postJson(deps.outbound.tenant, m.to, undefined, headers, m.body);
      return { status: 'sent' };
    },
  };
  const sms: ChannelProvider<Of<'sms'>> = {
    channel: 'sms',
    audience: 'person',
    unavailable: () => (config.SMS_PROVIDER_URL ? null : 'SMS_PROVIDER_URL is not configured'),
    async send(m) {
      await postJson(deps.outbound.trusted, config.SMS_PROVIDER_URL!, { to: m.to, body: m.body, idempotencyKey: m.idempotencyKey });
      return { status: 'sent' };
    },
  };
  const phone: ChannelProvider<Of<'phone'>> = {
    channel: 'phone',
    audience: 'person',
    unavailable: () => (config.PHONE_PROVIDER_URL ? null : 'PHONE_PROVIDER_URL is not configured'),
    async send(m) {
      await postJson(deps.outbound.trusted, config.PHONE_PROVIDER_URL!, { to: m.to, message: m.message, idempotencyKey: m.idempotencyKey });
      return { status: 'sent' };
    },
  };
  // Chat: the surfaces service holds the org's installation and speaks the platform's API.
  const chat = (channel: 'chatA' | 'chatB'): ChannelProvider<Of<'chatA' | 'chatB'>> => ({
    channel,
    audience: 'person',
    unavailable: ready,
    async send(m) {
      const r = await deps.bus.call(ChatEndpoints.notify, {
        org: m.org,
        provider: channel,
        deliveryId: m.deliveryId,
        decisionId: m.decisionId,
        approverEmail: m.approverEmail,
        target: m.to,
        notice: m.notice,
      });
      return r.status === 'sent' ? { status: 'sent', detail: `${r.channel}/${r.messageId}` } : r;
    },
  });
  // Push: Android through FCM HTTP v1, iOS through APNs; a token the provider reports dead revokes the device.
  const push: ChannelProvider<Of<'push'>> = {
    channel: 'push',
    audience: 'person',
    unavailable: ready,
    async send(m) {
      const device = await deps.people.activeDevice(m.to);
      if (!device) return { status: 'skipped', reason: 'the push device was revoked' };
      const sender = device.platform === 'android' ? deps.push.fcm : deps.push.apns;
      if (!sender)
        return {
          status: 'skipped',
          reason:
            device.platform === 'android'
              ? 'PUSH_FCM_SERVICE_ACCOUNT is not configured'
              : 'PUSH_APNS_KEY (with its key id, team id and topic) is not configured',
        };
      if ((await sender.send(device.token, m.content)) === 'unregistered') {
        await deps.people.revokeById(device.id);
        await announceChange(deps.bus, 'notifier', device.org_id);
        return { status: 'skipped', reason: 'the provider reports the device unregistered: revoked' };
      }
      return { status: 'sent' };
    },
  };
  return [email, webhook, sms, phone, chat('chatA'), chat('chatB'), push] as ChannelProvider[];
}
