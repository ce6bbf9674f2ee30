import {
  context,
  propagation,
  trace,
  INVALID_SPAN_CONTEXT,
  SpanKind,
  SpanStatusCode,
  ROOT_CONTEXT,
  type Context,
  type Span,
  type Link,
} from '@opentelemetry/api';

/**
 * Distributed traces (OpenTelemetry), off by default. With the standard variables set
 * (`OTEL_TRACES_EXPORTER=otlp`, or an `OTEL_EXPORTER_OTLP_ENDPOINT` /
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `OTEL_EXPORTER_OTLP_PROTOCOL`,
 * `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`...), each process exports its spans over
 * OTLP. The W3C `traceparent` travels in NATS headers across request/reply, in the event
 * envelope across the outbox and JetStream, in delivery rows across the notifier's queue,
 * and in the HTTP request of an engine resume: one decision's trace runs gateway →
 * decisions → policies → outbox → notifier → engine. Off, every call here is a no-op of
 * the OpenTelemetry API.
 */

export const tracer = trace.getTracer('approvals');

/** One SDK per process, whichever service (or module copy) starts first. */
const STATE = Symbol.for('approvals.tracing');
type TracingState = { starting?: Promise<{ shutdown(): Promise<void> } | undefined>; on?: boolean };
const state = ((globalThis as Record<symbol, TracingState>)[STATE] ??= {});

export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  const exporter = env.OTEL_TRACES_EXPORTER;
  if (exporter === 'none' || env.OTEL_SDK_DISABLED === 'true') return false;
  return Boolean(exporter || env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** Starts the SDK once per process when configured; answers whether tracing is on. */
export async function startTracing(service: string): Promise<boolean> {
  if (!state.starting) {
    if (!tracingConfigured()) return false;
    state.starting = (async () => {
      // Traces only: metrics are Prometheus's (METRICS_PORT), logs go to stdout.
      process.env.OTEL_METRICS_EXPORTER ??= 'none';
      process.env.OTEL_LOGS_EXPORTER ??= 'none';
      // Loaded only when used: the SDK is sizeable, and off is the default.
      const { NodeSDK } = await import('@opentelemetry/sdk-node');
      const sdk = new NodeSDK({ serviceName: process.env.OTEL_SERVICE_NAME ?? `approvals-${service}`, instrumentations: [] });
      sdk.start();
      state.on = true;
      return sdk;
    })();
  }
  return Boolean(await state.starting);
}

/** Flushes and stops the SDK (a stopping process), and unregisters the global API. */
export async function stopTracing(): Promise<void> {
  const starting = state.starting;
  state.starting = undefined;
  state.on = false;
  const sdk = await starting?.catch(() => undefined);
  if (!sdk) return;
  await sdk.shutdown().catch(() => undefined);
  trace.disable();
  context.disable();
  propagation.disable();
}

/** Whether spans are recorded in this process: off, the hot paths skip the API entirely. */
export function tracingActive(): boolean {
  return state.on === true;
}

/** The current context's `traceparent` (and `tracestate`), for a header or a stored row; undefined when no span is active. */
export function currentTraceparent(ctx?: Context): string | undefined {
  if (!state.on) return undefined;
  ctx ??= context.active();
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent;
}

/** The context a stored or received `traceparent` continues (the root context without one). */
export function contextFrom(traceparent: string | null | undefined): Context {
  if (!traceparent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent });
}

/** Headers-like carriers (NATS `MsgHdrs`, HTTP header objects) for propagation. */
export interface HeaderCarrier {
  get(k: string): string;
  set(k: string, v: string): void;
}

export function injectInto(carrier: HeaderCarrier, ctx: Context = context.active()): void {
  propagation.inject(ctx, carrier, { set: (c, k, v) => c.set(k, v) });
}

export function extractFrom(carrier: HeaderCarrier | undefined): Context {
  if (!carrier) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier, { get: (c, k) => c.get(k) || undefined, keys: () => ['traceparent', 'tracestate'] });
}

/** Runs `fn` in a new span (child of `parent`, default the active context), ending it with the outcome. */
export async function inSpan<T>(
  name: string,
  opts: { kind?: SpanKind; parent?: Context; attributes?: Record<string, string | number | boolean>; links?: Link[] },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (!state.on) return fn(trace.wrapSpanContext(INVALID_SPAN_CONTEXT));
  const parent = opts.parent ?? context.active();
  const span = tracer.startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes, links: opts.links }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
    throw err;
  } finally {
    span.end();
  }
}

/** The active span's ids, for log lines (empty without one). */
export function traceFields(): { traceId?: string; spanId?: string } {
  if (!state.on) return {};
  const sc = trace.getActiveSpan()?.spanContext();
  if (!sc || !trace.isSpanContextValid(sc)) return {};
  return { traceId: sc.traceId, spanId: sc.spanId };
}

export { SpanKind };
