import { connect, type Socket } from 'node:net';

/** An HTTP answer as the bench reads it: the status and the body as text. */
export interface HttpAnswer {
  status: number;
  text: string;
}

interface Pending {
  resolve: (a: HttpAnswer) => void;
  reject: (err: Error) => void;
  label: string;
}

const EMPTY = Buffer.alloc(0);
const HEAD_END = Buffer.from('\r\n\r\n');
/** Statuses that never carry a body (RFC 9110 §6.4.1). */
const NO_BODY = new Set([204, 304]);

/**
 * The bench's HTTP/1.1 client: one request at a time on each kept-alive TCP connection,
 * written as one string and read by its `Content-Length`, as a load generator such as wrk
 * does it. It shares the host's two cores with the system it measures, so the less it
 * costs the less it takes from the system: node:http's client (its parser, its agent, a
 * request and a response object per call) took about as much CPU a request again as the
 * system's own HTTP server.
 *
 * A connection is taken from the idle ones, or opened when none is idle (as many as
 * requests in flight). An answer without `Content-Length` (chunked, or up to the close) is
 * refused as an error rather than guessed at: the gateway sends its JSON with a length.
 * A connection idle for `idleMs` is closed by the client, before the server's keep-alive
 * timeout (the gateway's is 5 s) closes it: otherwise a request sent as the server closes
 * the connection fails, the keep-alive race every client has to avoid.
 */
export class KeptAliveClient {
  private readonly idle: Connection[] = [];
  private readonly open = new Set<Connection>();
  private closed = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly idleMs = 4000,
  ) {}

  /** Sends one request; `headers` are added as given (`Host` and `Content-Length` are the client's). */
  request(method: string, path: string, headers: Record<string, string>, body?: string): Promise<HttpAnswer> {
    if (this.closed) return Promise.reject(new Error('the HTTP client is closed'));
    let head = `${method} ${path} HTTP/1.1\r\nHost: ${this.host}:${this.port}\r\n`;
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    if (body !== undefined) head += `Content-Length: ${Buffer.byteLength(body)}\r\n`;
    const text = `${head}\r\n${body ?? ''}`;
    const conn = this.idle.pop() ?? this.connectOne();
    return conn.send(text, `${method} ${path}`);
  }

  /** Connections open now (idle or busy). */
  get connections(): number {
    return this.open.size;
  }

  /** Closes every connection; requests in flight fail. */
  close(): void {
    this.closed = true;
    for (const c of [...this.open]) c.destroy(new Error('the HTTP client was closed'));
  }

  private connectOne(): Connection {
    const conn = new Connection(connect(this.port, this.host), this.idleMs, {
      idle: (c) => {
        if (this.closed) return c.destroy(new Error('the HTTP client was closed'));
        this.idle.push(c);
      },
      gone: (c) => {
        this.open.delete(c);
        const i = this.idle.indexOf(c);
        if (i >= 0) this.idle.splice(i, 1);
      },
    });
    this.open.add(conn);
    return conn;
  }
}

/** One kept-alive connection and the answer it is reading. */
class Connection {
  private buf: Buffer = EMPTY;
  private pending: Pending | undefined;
  /** The answer being read: its status, where its body starts and how long it is. */
  private answer: { status: number; bodyAt: number; length: number; close: boolean } | undefined;
  private dead = false;

  constructor(
    private readonly socket: Socket,
    idleMs: number,
    private readonly pool: { idle: (c: Connection) => void; gone: (c: Connection) => void },
  ) {
    socket.setNoDelay(true);
    socket.setTimeout(idleMs, () => {
      if (!this.pending) this.destroy(new Error('idle'));
    });
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy(new Error('the server closed the connection')));
  }

  send(text: string, label: string): Promise<HttpAnswer> {
    return new Promise((resolve, reject) => {
      if (this.dead) return reject(new Error(`${label} failed: the connection is closed`));
      this.pending = { resolve, reject, label };
      this.socket.write(text);
    });
  }

  destroy(err: Error): void {
    if (this.dead) return;
    this.dead = true;
    this.socket.destroy();
    this.pool.gone(this);
    const p = this.pending;
    this.pending = undefined;
    p?.reject(new Error(`${p.label} failed`, { cause: err }));
  }

  private read(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    if (!this.pending) return this.destroy(new Error('the server sent bytes no request asked for'));
    if (!this.answer) {
      const end = this.buf.indexOf(HEAD_END);
      if (end < 0) return;
      const head = this.buf.toString('latin1', 0, end);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1]);
      if (!status) return this.destroy(new Error(`not an HTTP answer: ${JSON.stringify(head.slice(0, 40))}`));
      const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
      if (length === undefined && !NO_BODY.has(status))
        return this.destroy(new Error(`an answer (${status}) without Content-Length, which this client does not read`));
      const close = /\r\nconnection: *close/i.test(head) || head.startsWith('HTTP/1.0');
      this.answer = { status, bodyAt: end + HEAD_END.length, length: length === undefined ? 0 : Number(length), close };
    }
    const a = this.answer;
    if (this.buf.length < a.bodyAt + a.length) return;
    if (this.buf.length > a.bodyAt + a.length) return this.destroy(new Error('the server sent more than the answer it announced'));
    const text = this.buf.toString('utf8', a.bodyAt, a.bodyAt + a.length);
    const p = this.pending;
    this.pending = undefined;
    this.answer = undefined;
    this.buf = EMPTY;
    if (a.close) this.destroy(new Error('closed after its answer'));
    else this.pool.idle(this);
    p.resolve({ status: a.status, text });
  }
}
