import type { z } from 'zod';
import { AppError, isDatabaseUnavailable, newId, type ErrorBody, type Logger } from '@approvals/shared';

export interface Issue {
  path: string;
  message: string;
}

export function zodIssues(location: string, err: z.ZodError): Issue[] {
  return err.issues.map((i) => {
    const keys = (i as { keys?: string[] }).keys;
    const path = [location, ...i.path.map(String)].join('.');
    // Unknown fields: name each one, so the caller sees exactly what to remove.
    if (i.code === 'unrecognized_keys' && keys?.length) return { path, message: `unknown field(s): ${keys.join(', ')}` };
    return { path, message: i.message };
  });
}

export function invalidRequest(issues: Issue[]): AppError {
  const first = issues[0];
  return new AppError('invalid_request', first ? `${first.path}: ${first.message}` : 'invalid request', { issues });
}

/** Maps anything thrown to the spec's error body. Unknown errors are 500 with an id that is also logged. */
export function toErrorResponse(err: unknown, log: Logger, requestId?: string): { status: number; body: ErrorBody } {
  if (err instanceof AppError) return { status: err.status, body: err.toJSON() };
  const e = err as { type?: string; status?: number; statusCode?: number; message?: string };
  // body-parser errors carry a type and a 4xx status.
  if (e?.type === 'entity.too.large') return { status: 413, body: { error: 'payload_too_large', message: 'request body is larger than the limit' } };
  if (e?.type === 'body.invalid_utf8')
    return {
      status: 400,
      body: { error: 'invalid_request', message: 'body: the request body is not valid UTF-8', issues: [{ path: 'body', message: 'not valid UTF-8' }] },
    };
  if (e?.type === 'entity.parse.failed')
    return {
      status: 400,
      body: { error: 'invalid_request', message: 'request body is not valid JSON', issues: [{ path: 'body', message: 'not valid JSON' }] },
    };
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported')
    return { status: 415, body: { error: 'unsupported_media_type', message: e.message ?? 'unsupported encoding' } };
  const status = e?.status ?? e?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const message = e.message ?? 'bad request';
    if (status === 413) return { status, body: { error: 'payload_too_large', message } };
    if (status === 415) return { status, body: { error: 'unsupported_media_type', message } };
    if (status !== 400) return { status, body: { error: 'invalid_request', message } };
    // A path that does not percent-decode (router), a body that does not inflate or read
    // (body-parser): malformed requests, named like every other 400.
    const path = /decode param/i.test(message) ? 'params' : 'body';
    return { status, body: { error: 'invalid_request', message: `${path}: ${message}`, issues: [{ path, message }] } };
  }
  if (isDatabaseUnavailable(err)) {
    log.warn({ err, requestId }, 'database unavailable');
    return { status: 503, body: { error: 'unavailable', message: 'the database is unavailable right now; try again shortly' } };
  }
  const errorId = newId('error');
  log.error({ err, errorId, requestId }, 'unhandled error');
  return { status: 500, body: { error: 'internal', message: 'internal error', errorId } };
}
