import { describe, expect, it } from '@jest/globals';
import nodemailer from 'nodemailer';
import { pooledSmtpUrl } from '../src/providers/people';

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
