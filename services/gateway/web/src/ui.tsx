import { useCallback, useEffect, useState, useSyncExternalStore, type ReactNode } from 'react';
import { ApiError } from './api';
import { can, type Session } from './auth';

// ---- routing: paths under /app/, history API ----------------------------------------

export function navigate(to: string): void {
  history.pushState(null, '', to);
  window.dispatchEvent(new PopStateEvent('popstate'));
}

/** The current path, read from `location` on every render (a navigation that happened before subscribing is not missed). */
export function usePath(): string {
  return useSyncExternalStore(
    (onChange) => {
      window.addEventListener('popstate', onChange);
      return () => window.removeEventListener('popstate', onChange);
    },
    () => location.pathname + location.search,
  );
}

export function Link(props: { to: string; children: ReactNode; className?: string }) {
  return (
    <a
      href={props.to}
      className={props.className}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}

// ---- data ----------------------------------------------------------------------------

export interface Loaded<T> {
  data: T | undefined;
  error: string | null;
  loading: boolean;
  reload: () => void;
}

/** Loads on mount and when `deps` change; `refreshMs` polls (live inbox). */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[], refreshMs?: number): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    let live = true;
    setLoading(true);
    fn().then(
      (d) => {
        if (!live) return;
        setData(d);
        setError(null);
        setLoading(false);
      },
      (err) => {
        if (!live) return;
        setError(messageOf(err));
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  useEffect(() => {
    if (!refreshMs) return;
    const t = setInterval(() => document.visibilityState === 'visible' && reload(), refreshMs);
    return () => clearInterval(t);
  }, [refreshMs, reload]);
  return { data, error, loading, reload };
}

export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  return err instanceof Error ? err.message : String(err);
}

/** Runs an action, keeping its error and busy state for the button that started it. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback(async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (err) {
      setError(messageOf(err));
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, setError };
}

// ---- pieces --------------------------------------------------------------------------

export function ErrorBox({ error }: { error: string | null }) {
  if (!error) return null;
  return (
    <p role="alert" className="error">
      {error}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Field(props: { label: string; children: ReactNode; hint?: string }) {
  return (
    <label className="field">
      <span>{props.label}</span>
      {props.children}
      {props.hint ? <small className="muted">{props.hint}</small> : null}
    </label>
  );
}

export function Status({ status }: { status: string }) {
  return <span className={`status status-${status.toLowerCase()}`}>{status}</span>;
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

const NAV: Array<{ to: string; label: string; needs?: 'read' | 'admin' }> = [
  { to: '/app/', label: 'Inbox' },
  { to: '/app/decisions', label: 'Decisions' },
  { to: '/app/policies', label: 'Policies', needs: 'read' },
  { to: '/app/approvers', label: 'Approvers', needs: 'read' },
  { to: '/app/api-keys', label: 'API keys', needs: 'admin' },
  { to: '/app/audit', label: 'Audit log', needs: 'read' },
  { to: '/app/usage', label: 'Usage', needs: 'read' },
  { to: '/app/settings', label: 'Settings', needs: 'admin' },
  { to: '/app/integrations', label: 'Integrations', needs: 'read' },
  { to: '/app/settings/me', label: 'My account' },
];

export function Layout(props: { session: Session; path: string; children: ReactNode; onSignOut: () => void }) {
  const nav = NAV.filter((n) => !n.needs || can[n.needs](props.session));
  // The page's own entry: the longest one the path is or is under (/app/settings/me is not Settings, /app/settings/members not /app/settings/me).
  const active = nav.filter((n) => props.path === n.to || (n.to !== '/app/' && props.path.startsWith(`${n.to}/`))).sort((a, b) => b.to.length - a.to.length)[0];
  return (
    <>
      <header className="top">
        <strong>Approvals</strong>
        <nav aria-label="Main">
          {nav.map((n) => (
            <Link key={n.to} to={n.to} className={n === active ? 'active' : ''}>
              {n.label}
            </Link>
          ))}
        </nav>
        <span className="who">
          {props.session.email}
          {` (${props.session.role})`}
          <button type="button" className="link" onClick={props.onSignOut}>
            Sign out
          </button>
        </span>
      </header>
      <main>{props.children}</main>
    </>
  );
}
