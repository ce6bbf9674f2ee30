import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface Mail {
  from: string;
  to: string[];
  raw: string;
  subject: string;
  /** Decoded body (quoted-printable undone), text and HTML parts together. */
  body: string;
  receivedAt: number;
}

function decodeQuotedPrintable(s: string): string {
  const bytes = s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

/** A real SMTP server on loopback that keeps every message it accepts. */
export async function startSmtp(): Promise<{ url: string; mails: Mail[]; stop(): Promise<void> }> {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const subjectLine = /^Subject: (.*(?:\r?\n[ \t].*)*)/m.exec(raw)?.[1] ?? '';
        const subject = subjectLine
          .replace(/\r?\n[ \t]/g, ' ')
          .replace(/=\?UTF-8\?Q\?(.*?)\?=/gi, (_, q: string) => decodeQuotedPrintable(q.replace(/_/g, ' ')));
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          subject,
          body: decodeQuotedPrintable(raw),
          receivedAt: Date.now(),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, mails, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  raw: string;
  at: number;
}

/**
 * An HTTP server that records requests and answers 200 (or what `respond` says), for
 * engine and webhook receivers.
 */
export async function startRecorder(
  respond?: (r: Recorded, res: ServerResponse) => boolean | Promise<boolean>,
): Promise<{ url: string; requests: Recorded[]; server: Server; stop(): Promise<void> }> {
  const requests: Recorded[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = raw;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        /* keep raw */
      }
      const r: Recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, raw, at: Date.now() };
      requests.push(r);
      if (respond && (await respond(r, res))) return;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    server,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Action links in a mail body. */
export function actionLinks(mail: Mail): { approve?: string; reject?: string } {
  const urls = [...mail.body.matchAll(/https?:\/\/[^\s"'<>]+\/v1\/surfaces\/email\/act\?token=[A-Za-z0-9._~%-]+/g)].map((m) => m[0]);
  const approve = /Approve: (\S+)/.exec(mail.body)?.[1];
  const reject = /Reject: (\S+)/.exec(mail.body)?.[1];
  return { approve: approve ?? urls[0], reject: reject ?? urls[1] };
}
