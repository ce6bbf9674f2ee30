import { createServer, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '@approvals/shared';

export interface ConnectionLimits {
  /** Open connections allowed from one peer address (the socket's, not X-Forwarded-For). */
  perIp: number;
  /** Open connections allowed in all. */
  total: number;
  /** Time a client has to send its request headers. */
  headersTimeoutMs: number;
  /** Time a client has to send its whole request (headers and body); answers may take longer. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection is kept. */
  keepAliveTimeoutMs: number;
  /** Requests served on one keep-alive connection before it is closed. */
  maxRequestsPerSocket: number;
  /** Seconds a refused client is told to wait. */
  retryAfterSec?: number;
}

/**
 * Past this share of the total cap the server is crowded: from then on only peers holding
 * fewer than {@link FEW_CONNECTIONS} get a new connection, so the rest of the cap stays
 * for clients that hold few. Without it, total / perIp greedy peers (17 at 4096 and 256)
 * filled the cap and every new client got 503.
 */
export const CROWDED_SHARE = 0.75;
/** What a peer may still open once the server is crowded: a browser opens up to six connections to one host. */
export const FEW_CONNECTIONS = 8;

/**
 * The gateway's HTTP server, hardened against connection exhaustion: every client must
 * send its headers and its request within bounded times, and no peer (nor all peers
 * together) may hold more than its share of sockets. Fair admission: a peer may hold up to
 * `perIp` connections while fewer than {@link CROWDED_SHARE} of `total` are open; past
 * that, only a peer holding fewer than {@link FEW_CONNECTIONS} gets another, so greedy
 * peers together hold at most about three quarters of the cap and the last quarter is
 * left for peers that hold few (at 4096, at least 128 more of them). A connection past a
 * cap is answered at once with a plain 503 `unavailable` and `Retry-After`, then closed,
 * instead of being left to exhaust file descriptors so that new clients are reset.
 */
export function createLimitedServer(app: RequestListener, limits: ConnectionLimits, log: Logger): Server {
  // The HTTP machinery still parses a refused socket (it reads the handle directly): any
  // request that arrives on one is dropped before it reaches the app.
  const refused = new WeakSet<Socket>();
  const server = createServer(
    {
      headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Node checks the two timeouts above on this interval (default 30 s).
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(limits.headersTimeoutMs / 2))),
    },
    (req, res) => {
      if (refused.has(req.socket)) {
        req.socket.destroy();
        return;
      }
      app(req, res);
    },
  );
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  const perPeer = new Map<string, number>();
  let open = 0;
  let lastWarn = 0;
  const crowded = Math.ceil(limits.total * CROWDED_SHARE);
  const few = Math.min(limits.perIp, FEW_CONNECTIONS);
  const retryAfter = String(limits.retryAfterSec ?? 1);
  const body = JSON.stringify({ error: 'unavailable', message: 'too many open connections; retry later' });
  const refusal =
    `HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json; charset=utf-8\r\nretry-after: ${retryAfter}\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;

  // Registered before the HTTP machinery's own listener, so a refused socket never reaches it.
  server.prependListener('connection', (socket: Socket) => {
    const peer = socket.remoteAddress ?? 'unknown';
    const mine = perPeer.get(peer) ?? 0;
    const over = open >= limits.total ? 'total' : mine >= limits.perIp ? 'perIp' : open >= crowded && mine >= few ? 'crowded' : undefined;
    if (over) {
      const now = Date.now();
      if (now - lastWarn > 10_000) {
        lastWarn = now;
        log.warn(
          { peer, peerConnections: mine, open, over, limits: { perIp: limits.perIp, total: limits.total, crowded, few } },
          'connection refused: over the connection cap',
        );
      }
      refused.add(socket);
      socket.on('error', () => undefined);
      socket.end(refusal);
      socket.setTimeout(5000, () => socket.destroy());
      return;
    }
    open++;
    perPeer.set(peer, mine + 1);
    socket.once('close', () => {
      open--;
      const left = (perPeer.get(peer) ?? 1) - 1;
      if (left <= 0) perPeer.delete(peer);
      else perPeer.set(peer, left);
    });
  });
  return server;
}
