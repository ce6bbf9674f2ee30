import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { listenOn } from '@approvals/shared/infra';

/**
 * The local cluster's load balancer: TCP round robin over the gateway replicas. A backend
 * that refuses a connection (a replica restarting, or stopped) is skipped and marked down
 * for a second; the client's connection goes to the next one. It works at the connection
 * level, as a cloud load balancer in TCP mode does: keep-alive connections stay on their
 * replica, and a draining replica closes its idle ones so clients reconnect elsewhere.
 */
export async function startBalancer(opts: {
  port: number;
  host?: string;
  backends: () => number[];
  /**
   * Whether a backend takes new connections (its `/readyz`), asked every 250 ms: a replica
   * that is draining says no while it finishes, and gets no new connections.
   */
  ready?: (backend: number) => Promise<boolean>;
}): Promise<{ port: number; server: Server; close(): Promise<void> }> {
  let next = 0;
  const downUntil = new Map<number, number>();
  const notReady = new Set<number>();
  const open = new Set<Socket>();
  let checking = true;
  const check = async () => {
    while (checking && opts.ready) {
      await Promise.all(
        opts.backends().map(async (p) => {
          if (await opts.ready!(p).catch(() => false)) notReady.delete(p);
          else notReady.add(p);
        }),
      );
      await new Promise((r) => setTimeout(r, 250).unref());
    }
  };
  void check();

  const connect = (client: Socket, tried: Set<number>) => {
    const all = opts.backends();
    const candidates = all.filter((p) => !tried.has(p));
    if (candidates.length === 0) {
      client.destroy();
      return;
    }
    const now = Date.now();
    const up = candidates.filter((p) => (downUntil.get(p) ?? 0) <= now && !notReady.has(p));
    const pool = up.length ? up : candidates;
    const port = pool[next++ % pool.length]!;
    tried.add(port);
    const upstream = createConnection({ port, host: '127.0.0.1' });
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      open.add(upstream);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on('error', () => {
      if (!connected) {
        downUntil.set(port, Date.now() + 1000);
        connect(client, tried);
      } else client.destroy();
    });
    upstream.on('close', () => {
      open.delete(upstream);
      client.destroy();
    });
    client.on('close', () => upstream.destroy());
    client.on('error', () => upstream.destroy());
  };

  const server = createServer({ pauseOnConnect: true }, (client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    connect(client, new Set());
  });
  const port = await listenOn(server, opts.port, opts.host);
  return {
    port,
    server,
    close: async () => {
      checking = false;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of open) s.destroy();
      });
    },
  };
}
