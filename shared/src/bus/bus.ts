import { connect } from '@nats-io/transport-node';
import { NoRespondersError, TimeoutError, type NatsConnection } from '@nats-io/nats-core';
import { jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/nats-core';
import type { z } from 'zod';
import { WireReply, type EndpointDef } from '../contracts/endpoint';
import { AppError, isErrorCode } from '../errors';
import type { Logger } from '../logger';
import { EVENTS_SUBJECTS, STREAM_EVENTS } from '../subjects';
import { LargePayloads } from './large';

/** Pause before resending a request nobody was subscribed to (a replica restarting). */
const NO_RESPONDERS_PAUSE_MS = 300;

export interface BusOptions {
  url: string;
  name: string;
  log: Logger;
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

  private constructor(
    readonly nc: NatsConnection,
    readonly log: Logger,
    private readonly requestTimeoutMs: number,
  ) {
    this.js = jetstream(nc);
    this.large = new LargePayloads(nc);
  }

  static async connect(opts: BusOptions): Promise<Bus> {
    const nc = await connect({
      servers: opts.url,
      name: opts.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
    });
    return new Bus(nc, opts.log, opts.requestTimeoutMs ?? 10_000);
  }

  jsm(): Promise<JetStreamManager> {
    this.jsmPromise ??= jetstreamManager(this.nc);
    return this.jsmPromise;
  }

  /** Creates the EVENTS stream or brings its configuration up to date. Safe to call from every service. */
  async ensureEventsStream(): Promise<void> {
    const jsm = await this.jsm();
    const config = {
      name: STREAM_EVENTS,
      subjects: [EVENTS_SUBJECTS],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: nanos(7 * 24 * 3600 * 1000),
      // Long enough to cover an outbox relay that crashed after publishing and was
      // restarted: its republish carries the same Nats-Msg-Id and is dropped.
      duplicate_window: nanos(20 * 60 * 1000),
    };
    try {
      await jsm.streams.info(STREAM_EVENTS);
      await jsm.streams.update(STREAM_EVENTS, config);
    } catch (err) {
      if (!isStreamNotFound(err)) throw err;
      try {
        await jsm.streams.add(config);
      } catch (addErr) {
        // Another service created it between our info and add.
        if (!String((addErr as Error).message).includes('already in use')) throw addErr;
      }
    }
  }

  /** Typed request/reply. Error replies are rethrown as AppError with the same code. */
  async request<Req extends z.ZodType, Res extends z.ZodType>(
    ep: EndpointDef<Req, Res>,
    req: z.input<Req>,
    opts: { timeoutMs?: number } = {},
  ): Promise<Reply<z.output<Res>>> {
    const checked = ep.request.safeParse(req);
    if (!checked.success) {
      throw new AppError('invalid_request', `request to ${ep.subject} does not match its contract`, {
        issues: checked.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
      });
    }
    const payload = checked.data;
    const timeout = opts.timeoutMs ?? ep.timeoutMs ?? this.requestTimeoutMs;
    const body = await this.large.wrap(encodeJson(payload));
    let raw: Uint8Array;
    for (let attempt = 1; ; attempt++) {
      try {
        const msg = await this.nc.request(ep.subject, body, { timeout });
        raw = await this.large.unwrap(msg.data);
        break;
      } catch (err) {
        if (err instanceof AppError) throw err;
        const failure = toTransportError(ep.subject, err);
        const noResponders = isNoResponders(err);
        // A replica that died holding the request never answers; one that is restarting
        // is briefly absent. An idempotent request goes out once more, to whichever
        // replica is there; anything else fails now rather than risk doing it twice.
        if (!ep.idempotent || attempt > 1 || (failure.code !== 'timeout' && !noResponders)) throw failure;
        this.log.warn({ subject: ep.subject, reason: failure.code }, 'no answer; resending an idempotent request once');
        if (noResponders) await new Promise((r) => setTimeout(r, NO_RESPONDERS_PAUSE_MS));
      }
    }
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

  /** Request that returns only the data. */
  async call<Req extends z.ZodType, Res extends z.ZodType>(ep: EndpointDef<Req, Res>, req: z.input<Req>, opts?: { timeoutMs?: number }): Promise<z.output<Res>> {
    return (await this.request(ep, req, opts)).data;
  }

  async close(): Promise<void> {
    if (this.nc.isClosed()) return;
    try {
      await this.nc.drain();
    } catch {
      await this.nc.close();
    }
  }
}

function isStreamNotFound(err: unknown): boolean {
  const e = err as { code?: number; api_error?: { err_code?: number }; message?: string };
  return e?.api_error?.err_code === 10059 || /stream not found/i.test(String(e?.message));
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
