import { nanos } from '@nats-io/nats-core';
import { Svcm, type Service, type ServiceMsg } from '@nats-io/services';
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { EndpointDef } from '../contracts/endpoint';
import { isDatabaseUnavailable } from '../db';
import { AppError, httpStatusOf } from '../errors';
import { newId } from '../ids';
import type { Logger } from '../logger';
import { busRequestSeconds, busRequestsTotal } from '../metrics';
import { SpanKind, extractFrom, inSpan, tracingActive } from '../tracing';
import type { ServiceName } from '../subjects';
import { Bus, PROGRESS_EVERY_MS, PROGRESS_HEADER, decodeJson, encodeJson } from './bus';
import { announceChange } from './invalidation';

/** A handler result with an explicit success status (for example 201 Created). */
export class StatusReply<T> {
  constructor(
    readonly status: number,
    readonly data: T,
  ) {}
}
export const withStatus = <T>(status: number, data: T) => new StatusReply(status, data);

export type Handler<Req extends z.ZodType, Res extends z.ZodType> = (req: z.output<Req>) => Promise<z.input<Res> | StatusReply<z.input<Res>>>;

/**
 * A NATS service (`@nats-io/services`): `$SRV.PING/INFO/STATS` discovery, and every
 * endpoint in the service's queue group so replicas share the load. It keeps count of
 * requests in flight so a graceful stop can wait for them to answer.
 */
export class ServiceHost {
  readonly instanceId = randomUUID().slice(0, 8);
  private readonly inflight = new Set<Promise<void>>();

  private constructor(
    private readonly bus: Bus,
    private readonly service: Service,
    private readonly log: Logger,
    private readonly name: string,
    private readonly announces?: ServiceName,
  ) {}

  /**
   * `announcesChangesAs`: after every successful request to an endpoint that is not
   * read-only, and before answering it, the change is announced for the caches of this
   * service's data (bus/invalidation), for the request's org.
   */
  static async create(opts: {
    bus: Bus;
    name: string;
    version: string;
    description?: string;
    log: Logger;
    announcesChangesAs?: ServiceName;
  }): Promise<ServiceHost> {
    const svcm = new Svcm(opts.bus.nc);
    const service = await svcm.add({
      name: opts.name,
      version: opts.version,
      description: opts.description ?? `approvals ${opts.name} service`,
      queue: opts.name,
    });
    return new ServiceHost(opts.bus, service, opts.log, opts.name, opts.announcesChangesAs);
  }

  get serviceId(): string {
    return this.service.info().id;
  }

  handle<Req extends z.ZodType, Res extends z.ZodType>(ep: EndpointDef<Req, Res>, handler: Handler<Req, Res>): void {
    const dot = ep.subject.lastIndexOf('.');
    const group = this.service.addGroup(ep.subject.slice(0, dot));
    group.addEndpoint(ep.subject.slice(dot + 1), {
      handler: (err, msg) => {
        if (err) {
          this.log.error({ err, subject: ep.subject }, 'endpoint subscription failed');
          return;
        }
        // dispatch answers every request itself; this catch only keeps a failure to
        // answer (the connection closing under it) from taking the process down.
        const p = this.dispatch(ep, handler, msg)
          .catch((e: unknown) => this.log.error({ err: e, subject: ep.subject }, 'could not answer a request'))
          .finally(() => this.inflight.delete(p));
        this.inflight.add(p);
      },
      metadata: { subject: ep.subject },
    });
  }

  /**
   * nats.js times only the synchronous part of a handler and counts only errors it throws;
   * ours are async and answer errors as replies. This adds the rest of each request's time
   * and every error reply to the endpoint's `$SRV.STATS` counters, so they show real
   * latency and error counts.
   */
  private statsOf(subject: string): EndpointStats | undefined {
    const handlers = (this.service as unknown as { handlers?: Array<{ subject: string; stats?: EndpointStats }> }).handlers;
    return handlers?.find((h) => h.subject === subject)?.stats;
  }

  /**
   * While a resendable request is worked on, an empty message to the progress subject its
   * caller named (PROGRESS_HEADER) every PROGRESS_EVERY_MS: the caller then knows it is slow,
   * not lost, and does not send it again (Bus.send). Nothing for requests answered sooner.
   */
  private sayWorking(ep: EndpointDef, msg: ServiceMsg): NodeJS.Timeout | undefined {
    const to = ep.idempotent ? msg.headers?.get(PROGRESS_HEADER) : undefined;
    // A subject of one line, without wildcards; NATS permissions bound where it may point.
    if (!to || to.length > 256 || !/^[^\s*>]+$/.test(to)) return undefined;
    const timer = setInterval(() => {
      try {
        this.bus.nc.publish(to);
      } catch {
        // The connection is closing: the caller hears nothing more and resends, as intended.
        clearInterval(timer);
      }
    }, PROGRESS_EVERY_MS);
    return timer;
  }

  private async dispatch<Req extends z.ZodType, Res extends z.ZodType>(ep: EndpointDef<Req, Res>, handler: Handler<Req, Res>, msg: ServiceMsg) {
    const working = this.sayWorking(ep, msg);
    try {
      await this.answer(ep, handler, msg);
    } finally {
      clearInterval(working);
    }
  }

  private async answer<Req extends z.ZodType, Res extends z.ZodType>(ep: EndpointDef<Req, Res>, handler: Handler<Req, Res>, msg: ServiceMsg) {
    const started = Date.now();
    let reply: { ok: true; status?: number; data: unknown } | ReturnType<typeof errorReply>;
    try {
      let body: unknown;
      const data = await this.bus.large.unwrap(msg.data);
      try {
        body = decodeJson(data);
      } catch {
        throw new AppError('invalid_request', 'request is not JSON');
      }
      const parsed = ep.request.safeParse(body);
      if (!parsed.success) {
        throw new AppError('invalid_request', 'request does not match the contract', {
          issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
        });
      }
      let result: Awaited<ReturnType<typeof handler>>;
      try {
        // The caller's trace, continued here (traceparent in the request's headers).
        result = tracingActive()
          ? await inSpan(ep.subject, { kind: SpanKind.SERVER, parent: extractFrom(msg.headers), attributes: { 'approvals.service': this.name } }, () =>
              handler(parsed.data),
            )
          : await handler(parsed.data);
      } finally {
        // Even after a failure: a handler may have changed something before it failed.
        if (this.announces && !ep.readOnly) {
          const org = (parsed.data as { org?: unknown }).org;
          await announceChange(this.bus, this.announces, typeof org === 'string' ? org : null);
        }
      }
      reply = result instanceof StatusReply ? { ok: true, status: result.status, data: result.data } : { ok: true, data: result };
    } catch (err) {
      reply = errorReply(err, this.log, ep.subject);
    }
    busRequestsTotal.inc({ service: this.name, subject: ep.subject, outcome: reply.ok ? 'ok' : reply.error.code });
    busRequestSeconds.observe({ service: this.name, subject: ep.subject }, (Date.now() - started) / 1000);
    const stats = this.statsOf(ep.subject);
    if (stats) {
      // countLatency (in the library's sync wrapper) already counted the request and ~0 ms.
      stats.processing_time += nanos(Date.now() - started);
      stats.average_processing_time = stats.num_requests > 0 ? Math.round(stats.processing_time / stats.num_requests) : 0;
      if (!reply.ok) {
        stats.num_errors++;
        stats.last_error = `${reply.error.code}: ${reply.error.message}`;
      }
    }
    if (!msg.reply) return;
    try {
      const body = await this.bus.large.wrap(encodeJson(reply));
      if (reply.ok) msg.respond(body);
      else {
        // The services convention (Nats-Service-Error-Code / Nats-Service-Error headers), with
        // the JSON error body our Bus reads.
        msg.respondError(httpStatusOf(reply.error.code), headerSafe(`${reply.error.code}: ${reply.error.message}`), body);
      }
    } catch (err) {
      // Never leave the caller waiting for a timeout: answer with an error that fits.
      const errorId = newId('error');
      this.log.error({ err, subject: ep.subject, errorId }, 'could not send the reply');
      msg.respond(encodeJson({ ok: false, error: { code: 'unavailable', message: 'the reply could not be sent; try again', details: { errorId } } }));
    }
  }

  /** Stops taking requests, then waits for the ones in flight to answer. */
  async stop(): Promise<void> {
    if (!this.service.isStopped) await this.service.stop();
    await Promise.allSettled([...this.inflight]);
  }
}

interface EndpointStats {
  num_requests: number;
  num_errors: number;
  processing_time: number;
  average_processing_time: number;
  last_error?: string;
}

/** A header value: one line, bounded. */
function headerSafe(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').slice(0, 512);
}

export function errorReply(
  err: unknown,
  log: Logger,
  subject: string,
): { ok: false; error: { code: string; message: string; details: Record<string, unknown> } } {
  if (err instanceof AppError) {
    if (err.status >= 500) log.warn({ err, subject }, err.message);
    return { ok: false, error: { code: err.code, message: err.message, details: err.details } };
  }
  if (isDatabaseUnavailable(err)) {
    // A passing outage, not a bug: the caller may retry (503 with Retry-After at the gateway).
    log.warn({ err, subject }, 'database unavailable');
    return { ok: false, error: { code: 'unavailable', message: 'the database is unavailable right now; try again shortly', details: { retryAfter: 2 } } };
  }
  const errorId = newId('error');
  log.error({ err, subject, errorId }, 'unhandled error');
  return { ok: false, error: { code: 'internal', message: 'internal error', details: { errorId } } };
}
