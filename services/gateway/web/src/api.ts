import { currentSession, signOut } from './auth';

/** An API error as the spec shapes it: `{error, message, ...details}` with the HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** The session ended (expired or refused): back to sign-in with a message, never a blank page. */
export function toSignIn(reason: string): void {
  signOut();
  const back = location.pathname + location.search;
  location.assign(`/app/login?reason=${encodeURIComponent(reason)}&next=${encodeURIComponent(back)}`);
}

/** Calls the public REST API with the session's bearer token. */
/** `T` names what the route answers: `ApiReply<route, method>` from ./types (the generated wire types). */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const session = currentSession();
  if (!session) {
    toSignIn('Your session has ended. Sign in again.');
    throw new ApiError(401, 'unauthorized', 'signed out');
  }
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${session.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network', 'The service could not be reached. Check your connection and try again.');
  }
  const text = await res.text();
  let parsed: { error?: string; message?: string } | undefined = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (res.status === 401) {
    toSignIn('Your session has expired. Sign in again.');
    throw new ApiError(401, 'unauthorized', parsed?.message ?? 'unauthorized');
  }
  if (!res.ok) {
    throw new ApiError(
      res.status,
      parsed?.error ?? 'error',
      parsed?.message ?? `The request failed (HTTP ${res.status}).`,
      (parsed ?? {}) as Record<string, unknown>,
    );
  }
  return parsed as T;
}

export const qs = (o: Record<string, string | number | undefined | null>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
};

/**
 * A CSV the API streams (`…/export.csv`), saved by the browser as a file: the name the
 * server gives (content-disposition), else `fallbackName`. A refusal throws its ApiError.
 */
export async function downloadCsv(pathAndQuery: string, fallbackName: string): Promise<void> {
  const res = await fetch(pathAndQuery, { headers: { authorization: `Bearer ${currentSession()?.token ?? ''}` } });
  if (!res.ok) {
    const body = (await res.json().catch(() => ({}))) as { error?: string; message?: string };
    throw new ApiError(res.status, body.error ?? 'error', body.message ?? `The export failed (HTTP ${res.status}).`);
  }
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? fallbackName;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
