import { describe, expect, it } from '@jest/globals';
import nodemailer from 'nodemailer';
import { randomBytes } from 'node:crypto';
import { notifierConfigFromEnv } from '../src/config';
import { messageIdOf, peopleProviders, pooledSmtpUrl } from '../src/providers/people';
import { startSmtp } from '../../../test/helpers/third-parties';

describe('SMTP connections are pooled', () => {
  it('turns nodemailer pool on with SMTP_MAX_CONNECTIONS, keeping the URL credentials', () => {
    const url = pooledSmtpUrl('smtp://user:p%40ss@127.0.0.1:2525', 5);
    expect(url).toBe('smtp://user:p%40ss@127.0.0.1:2525?pool=true&maxConnections=5');
    const t = nodemailer.createTransport(url) as unknown as {
      transporter: { constructor: { name: string }; options: { maxConnections: number; auth: { user: string; pass: string } } };
    };
    expect(t.transporter.constructor.name).toBe('SMTPPool');
    expect(t.transporter.options.maxConnections).toBe(5);
    expect(t.transporter.options.auth).toEqual({ user: 'user', pass: 'p@ss' });
  });

  it("leaves the URL's own choice alone", () => {
    expect(pooledSmtpUrl('smtps://mail.example.com:465/?pool=false', 5)).toBe('smtps://mail.example.com:465/?pool=false&maxConnections=5');
    expect(pooledSmtpUrl('smtp://h:25?maxConnections=2', 5)).toBe('smtp://h:25?maxConnections=2&pool=true');
  });
});

describe('a notice by mail', () => {
  it('keeps its Message-ID on every retry of one delivery, and its parts are quoted-printable whatever the script', async () => {
    const smtp = await startSmtp();
    try {
      // pool=false: a connection per mail, closed after it (nothing left open by the test).
      const config = notifierConfigFromEnv({
        DATABASE_URL: 'postgres://unused',
        SECRETS_KEY: randomBytes(32).toString('base64'),
        WEBHOOK_SIGNING_SECRET: randomBytes(32).toString('base64'),
        SMTP_URL: `${smtp.url}?pool=false`,
        MAIL_FROM: 'Approvals <approvals@example.com>',
      });
      const email = peopleProviders(config, {} as Parameters<typeof peopleProviders>[1]).find((p) => p.channel === 'email')!;
      const message = {
        channel: 'email' as const,
        to: 'ann@example.com',
        id: 'dlv_01',
        subject: '返金の承認: Refund 42',
        text: 'Ein Rückerstattungsantrag: 返金 42 EUR',
        html: '<p>Ein Rückerstattungsantrag: 返金 42 EUR</p>',
        headers: { 'X-Approvals-Delivery': 'dlv_01' },
      };
      const first = await email.send(message);
      const retry = await email.send(message);
      expect(first).toEqual({ status: 'sent', detail: '<dlv_01@example.com>' });
      expect(retry).toEqual(first);
      expect(smtp.mails).toHaveLength(2);
      for (const mail of smtp.mails) {
        expect(mail.raw.match(/^Message-ID: .*$/gm)).toEqual([expect.stringMatching(/^Message-ID: <dlv_01@example\.com>\r?$/)]);
        expect(mail.raw).toMatch(/^X-Approvals-Delivery: dlv_01\r?$/m);
        expect(mail.raw).toMatch(/^From: Approvals <approvals@example\.com>\r?$/m);
        expect(mail.raw).toMatch(/^To: ann@example\.com\r?$/m);
        expect({ from: mail.from, to: mail.to }).toEqual({ from: 'approvals@example.com', to: ['ann@example.com'] });
        expect(mail.raw).not.toMatch(/Content-Transfer-Encoding: base64/i);
        expect(mail.raw).toMatch(/Content-Transfer-Encoding: quoted-printable/i);
        // Decoded as any mail client would: the words are there, in both parts.
        expect(mail.body.split('Ein Rückerstattungsantrag: 返金 42 EUR')).toHaveLength(3);
      }
    } finally {
      await smtp.stop();
    }
  });

  it("takes the Message-ID's domain from MAIL_FROM", () => {
    expect(messageIdOf('dlv_1', 'Approvals <approvals@mail.example.org>')).toBe('<dlv_1@mail.example.org>');
    expect(messageIdOf('dlv_1', 'ops@example.net')).toBe('<dlv_1@example.net>');
    expect(messageIdOf('dlv_1', 'Approvals')).toBe('<dlv_1@localhost>');
  });
});
