import { createServer, connect } from 'node:net';
import { readFileSync } from 'node:fs';

/** The kernel's range of local ports for outgoing connections (Linux's), or its default. */
export function ephemeralPortRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (lo && hi && lo <= hi) return [lo, hi];
  } catch {
    // not Linux, or no /proc: the default range
  }
  return [32768, 60999];
}

/** Whether a listener can bind `port` on every address now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '0.0.0.0', () => srv.close(() => resolve(true)));
  });
}

/** A port the kernel hands out (listening on 0). */
function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * A port for a process to listen on a moment later, chosen below the kernel's range for
 * outgoing connections' local ports. A port from that range (what listening on 0 hands
 * out) can be taken as the local port of any connection opened before the listener binds
 * it, a service's pool connecting to PostgreSQL or NATS, and the listener then fails with
 * EADDRINUSE for as long as that connection lives (a replica of the cluster test never
 * came up that way). Below the range only another listener can take it. When the range
 * leaves no room below it, the kernel's choice.
 */
export async function freePort(): Promise<number> {
  const [low] = ephemeralPortRange();
  const min = 10_000;
  const max = low - 1;
  if (max - min >= 1000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = min + Math.floor(Math.random() * (max - min + 1));
      if (await canListen(port)) return port;
    }
  }
  return kernelPort();
}

export async function waitForPort(port: number, timeoutMs = 20_000, host = '127.0.0.1'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect({ port, host }, () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts `server` listening (port 0: any free one) and answers the port it got; a bind error rejects. */
export async function listenOn(server: import('node:net').Server, port: number, host = '0.0.0.0'): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : port;
}
