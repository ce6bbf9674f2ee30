import { connect } from '@nats-io/transport-node';
import {
  NoRespondersError,
  TimeoutError,
  createInbox,
  credsAuthenticator,
  headers,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from '@nats-io/nats-core';
import { ServiceErrorCodeHeader } from '@nats-io/services';
import { readFileSync } from 'node:fs';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { z } from 'zod';
import { WireReply, type EndpointDef } from '../contracts/endpoint';
import { AppError, isErrorCode } from '../errors';
import type { Logger } from '../logger';
import { busResendsTotal } from '../metrics';
import { LargePayloads } from './large';
import { inboxPrefixOf } from './permissions';
import { SpanKind, currentTraceparent, inSpan, injectInto, tracingActive } from '../tracing';

/** Pause before resending a request nobody was subscribed to (a replica restarting). */
const NO_RESPONDERS_PAUSE_MS = 300;

/**
 * A resendable request carries this header: where the replica working on it says so
 * (an empty message every PROGRESS_EVERY_MS until it answers). See `Bus.send`.
 */
export const PROGRESS_HEADER = 'Approvals-Progress';
/** How often a replica working on a resendable request says so. */
export const PROGRESS_EVERY_MS = 500;
/**
 * Silence after which the replica holding a resendable request is taken for gone: no
 * answer and no word of progress for three periods. It is then resent at once, so a
 * request a killed replica held is answered by another within about this long.
 */
export const SILENCE_MS = 3 * PROGRESS_EVERY_MS;

/** How a process identifies itself to NATS (user and password, or a `.creds` file). */
export interface NatsAuth {
  user?: string;
  pass?: string;
  /** A NATS `.creds` file (JWT + nkey seed), for deployments in operator mode. */
  credsFile?: string;
}

export interface BusOptions {
  /** `nats://host:port` (several, comma-separated: the servers of a cluster); `nats://user:pass@host:port` is accepted too. */
  url: string;
  name: string;
  log: Logger;
  auth?: NatsAuth;
  /** Default request timeout. Callers may pass their own per request. */
  requestTimeoutMs?: number;
}

export interface Reply<T> {
  status?: number;
  data: T;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return enc.encode(JSON.stringify(value));
}

export function decodeJson(data: Uint8Array): unknown {
  return JSON.parse(dec.decode(data));
}

/**
 * One NATS connection per process, with typed request/reply and JetStream handles.
 * Request and reply are both validated with the endpoint's zod schemas, so a contract
 * drift between two services fails loudly at the boundary instead of deep in a handler.
 */
export class Bus {
  readonly js: JetStreamClient;
  /** Request and reply bodies over the server's max_payload travel through the object store. */
  readonly large: LargePayloads;
  private jsmPromise?: Promise<JetStreamManager>;
  /** Where replicas say they are working on this process's resendable requests: `<inbox>.<n>`. */
  private readonly progressInbox: string;
  private readonly progress: Subscription;
  /** Resendable requests in flight by their progress token: each hears its word of progress. */
  private readonly watched = new Map<string, () => void>();
  private lastToken = 0;

  private constructor(
    readonly nc: NatsConnection,
    readonly log: Logger,
    private readonly requestTimeoutMs: number,
    private readonly inboxPrefix?: string,
  ) {
    this.js = jetstream(nc, this.jsOptions());
    this.large = new LargePayloads(nc, this.js);
    // Under the connection's own inbox prefix: only this user may read it, and the services
    // it calls may already publish there (their answers go to the same prefix).
    this.progressInbox = createInbox(inboxPrefix);
    const from = this.progressInbox.length + 1;
    this.progress = nc.subscribe(`${this.progressInbox}.*`, {
      callback: (err, msg) => {
        if (!err) this.watched.get(msg.subject.slice(from))?.();
      },
    });
  }

  static async connect(opts: BusOptions): Promise<Bus> {
    // Several servers (a cluster): credentials may be on the first; each is a seed.
    const parts = opts.url
      .split(',')
      .map((u) => u.trim())
      .filter(Boolean);
    const first = splitNatsUrl(parts[0] ?? opts.url);
    const servers = [first.servers, ...parts.slice(1).map((u) => splitNatsUrl(u).servers)];
    const { user, pass } = first;
    const auth = { user: opts.auth?.user ?? user, pass: opts.auth?.pass ?? pass, credsFile: opts.auth?.credsFile };
    // Replies come to an inbox under the user's own prefix, which only that user may
    // subscribe to: no other service can read them.
    const inboxPrefix = auth.user ? inboxPrefixOf(auth.user) : undefined;
    const nc = await connect({
      servers,
      name: opts.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // No Error (with its stack) captured per request and publish just in case one fails
      // later: a measurable share of every service's CPU. Our errors say what timed out.
      noAsyncTraces: true,
      ...(auth.user ? { user: auth.user, pass: auth.pass } : {}),
      ...(auth.credsFile ? { authenticator: credsAuthenticator(readFileSync(auth.credsFile)) } : {}),
      ...(inboxPrefix ? { inboxPrefix } : {}),
    });
    return new Bus(nc, opts.log, opts.requestTimeoutMs ?? 10_000, inboxPrefix);
  }

  /** JetStream's own inboxes (ordered consumers, watchers) under the connection's prefix too. */
  private jsOptions() {
    return this.inboxPrefix ? { watcherPrefix: this.inboxPrefix } : {};
  }

  jsm(): Promise<JetStreamManager> {
    this.jsmPromise ??= jetstreamManager(this.nc, this.jsOptions());
    return this.jsmPromise;
  }

  /**
   * Typed request/reply. The request is validated where it is received (the service), the
   * reply where it is received (here). Error replies are rethrown as AppError with the
   * same code.
   */
  async request<Req extends z.ZodType, Res extends z.ZodType>(
    ep: EndpointDef<Req, Res>,
    req: z.input<Req>,
    opts: { timeoutMs?: number } = {},
  ): Promise<Reply<z.output<Res>>> {
    if (!tracingActive()) return this.send(ep, req, opts);
    return inSpan(ep.subject, { kind: SpanKind.CLIENT, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': ep.subject } }, () =>
      this.send(ep, req, opts),
    );
  }

  private async send<Req extends z.ZodType, Res extends z.ZodType>(
    ep: EndpointDef<Req, Res>,
    req: z.input<Req>,
    opts: { timeoutMs?: number } = {},
  ): Promise<Reply<z.output<Res>>> {
    // Type-checked here and validated by the receiving service: one validation per process
    // boundary (the gateway has already validated what a person sent over HTTP).
    const payload = req;
    const timeout = opts.timeoutMs ?? ep.timeoutMs ?? this.requestTimeoutMs;
    const body = await this.large.wrap(encodeJson(payload));
    // The caller's trace continues in the service that answers (traceparent in the headers).
    const traced = currentTraceparent() !== undefined;
    const headersOf = (progress?: string): MsgHdrs | undefined => {
      if (!traced && !progress) return undefined;
      const h = headers();
      if (traced) injectInto(h);
      if (progress) h.set(PROGRESS_HEADER, progress);
      return h;
    };
    const once = (hdrs: MsgHdrs | undefined) => this.nc.request(ep.subject, body, { timeout, ...(hdrs ? { headers: hdrs } : {}) });
    let msg: Msg;
    try {
      // A resendable request is watched: its holder says it is working on it, and silence
      // means it is gone (`watchedRequest`). A wait too short to tell silence apart is not.
      msg = ep.idempotent && timeout > SILENCE_MS ? await this.watchedRequest(ep.subject, timeout, headersOf, once) : await once(headersOf());
    } catch (err) {
      if (err instanceof AppError) throw err;
      const failure = toTransportError(ep.subject, err);
      const noResponders = isNoResponders(err);
      // A replica that died holding the request never answers (here: an unwatched wait ran
      // out); one that is restarting is briefly absent. An idempotent request goes out once
      // more, to whichever replica is there; anything else fails now rather than risk doing it twice.
      if (!ep.idempotent || (failure.code !== 'timeout' && !noResponders)) throw failure;
      const reason = noResponders ? 'no_responders' : 'timeout';
      this.log.warn({ subject: ep.subject, reason }, 'no answer; resending an idempotent request once');
      busResendsTotal.inc({ subject: ep.subject, reason });
      if (noResponders) await new Promise((r) => setTimeout(r, NO_RESPONDERS_PAUSE_MS));
      try {
        msg = await once(headersOf());
      } catch (again) {
        throw toTransportError(ep.subject, again);
      }
    }
    const raw = await this.large.unwrap(msg.data);
    const wire = WireReply.parse(decodeJson(raw));
    if (!wire.ok) {
      const code = isErrorCode(wire.error.code) ? wire.error.code : 'internal';
      throw new AppError(code, wire.error.message, wire.error.details);
    }
    const parsed = ep.reply.safeParse(wire.data);
    if (!parsed.success) {
      this.log.error({ subject: ep.subject, issues: parsed.error.issues }, 'reply does not match its contract');
      throw new AppError('internal', `reply from ${ep.subject} does not match its contract`);
    }
    return { status: wire.status, data: parsed.data };
  }

  /**
   * A resendable request, watched: the replica working on it publishes an empty message to
   * its progress subject every PROGRESS_EVERY_MS (ServiceHost), so a request that is merely
   * slow (a busy database, a long poll) keeps its one send for the whole wait, while one
   * whose holder went silent for SILENCE_MS (killed, cut off from NATS) is resent at once
   * to whichever replica is there. The first send may still answer (its holder was only
   * stalled): the first successful answer of the two is taken, and both are idempotent. A wait that
   * runs out with its holder still working is `timeout`, not a second send (that would
   * double the load on a slow database). Only one resend, as for any idempotent request.
   */
  private async watchedRequest(
    subject: string,
    timeout: number,
    headersOf: (progress?: string) => MsgHdrs | undefined,
    once: (hdrs: MsgHdrs | undefined) => Promise<Msg>,
  ): Promise<Msg> {
    const token = String(++this.lastToken);
    let silent: NodeJS.Timeout | undefined;
    let heard = 0;
    const silence = new Promise<'silent'>((resolve) => {
      silent = setTimeout(() => {
        // Not before this turn's I/O: after a stall of this process its timers run first,
        // and a word of progress already waiting in the socket must still count.
        const seen = heard;
        setImmediate(() => heard === seen && resolve('silent'));
      }, SILENCE_MS);
    });
    this.watched.set(token, () => {
      heard++;
      silent?.refresh();
    });
    const first = once(headersOf(`${this.progressInbox}.${token}`));
    let outcome: Msg | 'silent';
    try {
      outcome = await Promise.race([first, silence]);
    } catch (err) {
      // A wait that ran out while its holder kept saying it works on it: slow, not gone.
      if (err instanceof TimeoutError || (err as Error)?.cause instanceof TimeoutError)
        throw new AppError('timeout', `${subject} did not answer in time (still being worked on)`);
      throw err;
    } finally {
      clearTimeout(silent);
      this.watched.delete(token);
    }
    if (outcome !== 'silent') return outcome;
    this.log.warn({ subject, reason: 'silent', silentMs: SILENCE_MS }, 'no answer; resending an idempotent request once');
    busResendsTotal.inc({ subject, reason: 'silent' });
    // The first answer that is not an error reply; when both are errors, or fail, the
    // resend's (a failure as an AppError: it is not sent a third time). A transient refusal
    // from one (`unavailable`, `rate_limited`) does not hide the other's success.
    const second = once(headersOf());
    const success = (p: Promise<Msg>) => p.then((m) => (m.headers?.get(ServiceErrorCodeHeader) ? Promise.reject(m) : m));
    return Promise.any([success(first), success(second)]).catch(() =>
      second.catch((err: unknown) => {
        throw err instanceof AppError ? err : toTransportError(subject, err);
      }),
    );
  }

  /** Request that returns only the data. */
  async call<Req extends z.ZodType, Res extends z.ZodType>(
    ep: EndpointDef<Req, Res>,
    req: z.input<Req>,
    opts?: { timeoutMs?: number },
  ): Promise<z.output<Res>> {
    return (await this.request(ep, req, opts)).data;
  }

  async close(): Promise<void> {
    if (this.nc.isClosed()) return;
    this.progress.unsubscribe();
    try {
      await this.nc.drain();
    } catch {
      await this.nc.close();
    }
  }
}

/** `nats://user:pass@host:port` → the URL without credentials, and the credentials. */
export function splitNatsUrl(url: string): { servers: string; user?: string; pass?: string } {
  const m = /^([a-z]+:\/\/)([^@/]+)@(.+)$/i.exec(url);
  if (!m) return { servers: url };
  const [user, pass] = m[2]!.split(':');
  return { servers: `${m[1]}${m[3]}`, user: decodeURIComponent(user ?? ''), pass: pass === undefined ? undefined : decodeURIComponent(pass) };
}

function isNoResponders(err: unknown): boolean {
  return err instanceof NoRespondersError || (err as Error)?.cause instanceof NoRespondersError;
}

function toTransportError(subject: string, err: unknown): AppError {
  if (isNoResponders(err)) return new AppError('unavailable', `no service answers ${subject}`);
  if (err instanceof TimeoutError || (err as Error)?.cause instanceof TimeoutError) {
    return new AppError('timeout', `${subject} did not answer in time`);
  }
  return new AppError('unavailable', `request to ${subject} failed: ${(err as Error)?.message ?? String(err)}`);
}
