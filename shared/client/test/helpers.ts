import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Stack } from '../../../test/helpers/stack';

let seq = 0;
export const uniq = (label: string) => `${label}-${Date.now().toString(36)}-${++seq}`;

/** A reviewer's vote through the reviewer route, with a session of that reviewer. */
export async function decide(stack: Stack, org: string, email: string, id: string, decision: 'approve' | 'reject', note?: string) {
  const res = await stack.http('POST', `/v1/decisions/${id}/decide`, {
    token: stack.session({ org, email }),
    body: note === undefined ? { decision } : { decision, note },
  });
  if (res.status !== 200) throw new Error(`vote failed: ${res.status} ${res.text}`);
  return res.body;
}

/** A fetch that records every request it passes on. */
export function countingFetch() {
  const calls: Array<{ method: string; url: string }> = [];
  /** Headers and body of each call, in the same order as `calls`. */
  const sent: Array<{ headers: Record<string, string>; body: string | undefined }> = [];
  const f: typeof fetch = async (input, init) => {
    calls.push({ method: init?.method ?? 'GET', url: String(input instanceof Request ? input.url : input) });
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => (headers[k] = v));
    sent.push({ headers, body: typeof init?.body === 'string' ? init.body : undefined });
    return fetch(input, init);
  };
  return { fetch: f, calls, sent };
}

export async function waitUntil(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A reverse proxy in front of the real gateway that answers the requests `fail` picks
 * with an error status (a gateway restart, a rate limit) and forwards the rest unchanged.
 */
export async function startFlakyProxy(
  target: string,
  fail: (req: IncomingMessage, n: number) => { status: number; headers?: Record<string, string> } | undefined,
): Promise<{ url: string; seen: Array<{ method: string; path: string; status: number }>; close: () => Promise<void> }> {
  const seen: Array<{ method: string; path: string; status: number }> = [];
  let n = 0;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const injected = fail(req, n++);
    if (injected) {
      seen.push({ method: req.method!, path: req.url!, status: injected.status });
      res.writeHead(injected.status, { 'content-type': 'application/json', ...(injected.headers ?? {}) });
      res.end(JSON.stringify({ error: injected.status === 429 ? 'rate_limited' : 'unavailable', message: `injected ${injected.status}` }));
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v;
    const up = await fetch(target + req.url, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
    const body = Buffer.from(await up.arrayBuffer());
    seen.push({ method: req.method!, path: req.url!, status: up.status });
    res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/json' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
