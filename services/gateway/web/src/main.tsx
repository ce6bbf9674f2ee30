import { StrictMode, useEffect, useState, type FormEvent } from 'react';
import { createRoot } from 'react-dom/client';
import type { Me } from './types';
import { api } from './api';
import {
  can,
  currentSession,
  finishOidc,
  redeemEmailLink,
  requestEmailLink,
  safeNext,
  signIn,
  signOut,
  startOidc,
  type OidcConfig,
  type Role,
  type Session,
} from './auth';
import { DecisionPage } from './pages/Decision';
import { Inbox } from './pages/Inbox';
import { IntegrationsPage } from './pages/Integrations';
import { MyAccountPage } from './pages/MyAccount';
import { ApiKeysPage, ApproversPage, UsagePage } from './pages/Operators';
import { AuditPage } from './pages/Audit';
import { DecisionsPage } from './pages/Decisions';
import { PoliciesPage, PolicyDetail } from './pages/Policies';
import { SettingsPage, settingsSectionOf } from './pages/settings';
import { ErrorBox, Layout, messageOf, navigate, usePath } from './ui';
import './styles.css';

/** A mailed link's code is redeemed once per page load (a second redeem of it would fail). */
let redeeming: { code: string; session: Promise<Session> } | null = null;

function Login({ onSession }: { onSession: (s: Session) => void }) {
  const params = new URLSearchParams(location.search);
  const [error, setError] = useState<string | null>(params.get('reason'));
  const [oidc, setOidc] = useState<OidcConfig | null>(null);
  const [email, setEmail] = useState('');
  const [sentTo, setSentTo] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const next = safeNext(params.get('next'));
  // A mailed sign-in link: `/app/login?code=…` without an OIDC `state`.
  const emailCode = params.get('state') === null ? params.get('code') : null;
  useEffect(() => {
    // `/app/login#token=<session JWT>`: the fragment never reaches a server or a log.
    const token = new URLSearchParams(location.hash.slice(1)).get('token');
    if (token) {
      history.replaceState(null, '', '/app/login');
      const s = signIn(token);
      if (s) {
        onSession(s);
        navigate(next);
        return;
      }
      setError('That sign-in link is not valid or has expired. Ask for a new one.');
    }
    if (emailCode) {
      // The code leaves the address bar (and the history) at once: it is a credential.
      history.replaceState(null, '', `/app/login?next=${encodeURIComponent(next)}`);
      if (redeeming?.code !== emailCode) redeeming = { code: emailCode, session: redeemEmailLink(emailCode) };
      redeeming.session.then(
        (s) => {
          onSession(s);
          navigate(next);
        },
        (err) => setError(messageOf(err)),
      );
    }
    void fetch('/app/config.json')
      .then((r) => r.json())
      .then(async (c: { oidc: OidcConfig | null }) => {
        setOidc(c.oidc);
        if (c.oidc && params.get('code') && params.get('state') !== null) {
          const done = await finishOidc(c.oidc, new URL(location.href));
          onSession(done.session);
          navigate(safeNext(done.returnTo));
        }
      })
      .catch((err) => setError(messageOf(err)));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  const send = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await requestEmailLink(email.trim(), next === '/app/' ? null : next);
      setSentTo(email.trim());
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="login">
      <h1>Approvals</h1>
      <ErrorBox error={error} />
      {next.startsWith('/app/decisions/') ? <p>Sign in to open the decision you were sent.</p> : null}
      {sentTo ? (
        <p role="status">
          We sent you a link. If <strong>{sentTo}</strong> belongs to an organisation here, a sign-in link is on its way (one per organisation). It works once,
          for 15 minutes{next === '/app/' ? '' : ', and brings you back to where you were going'}.
        </p>
      ) : (
        <form onSubmit={send} aria-label="Sign in by email">
          <label className="field">
            <span>Email</span>
            <input type="email" name="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
          </label>
          <button type="submit" disabled={busy || email.trim() === ''}>
            Email me a sign-in link
          </button>
        </form>
      )}
      {oidc ? (
        <p>
          <button type="button" onClick={() => startOidc(oidc, next).catch((err) => setError(messageOf(err)))}>
            Sign in with your identity provider
          </button>
        </p>
      ) : null}
    </main>
  );
}

function App() {
  const path = usePath();
  const [session, setSession] = useState<Session | null>(currentSession());
  // The role is the org's member list's, not the token's claim: asked once per session.
  const [role, setRole] = useState<{ token: string; role: Role } | null>(null);
  useEffect(() => {
    if (!session || role?.token === session.token) return;
    void api<Me>('GET', '/v1/me')
      .then((me) => setRole({ token: session.token, role: me.role }))
      .catch(() => undefined);
  }, [session, role]);
  if (session && role?.token === session.token && role.role !== session.role) {
    setSession({ ...session, role: role.role });
    return null;
  }
  const pathname = path.split('?')[0]!;
  if (pathname === '/app/login' || !session) {
    if (!session && pathname !== '/app/login') {
      navigate(`/app/login?next=${encodeURIComponent(path)}`);
      return null;
    }
    return <Login onSession={setSession} />;
  }
  const admin = can.admin(session);
  const reader = can.read(session);
  const m = (re: RegExp) => pathname.match(re);
  let page;
  let r: RegExpMatchArray | null;
  const settingsSection = settingsSectionOf(pathname);
  if ((r = m(/^\/app\/decisions\/([^/]+)$/))) page = <DecisionPage id={decodeURIComponent(r[1]!)} session={session} />;
  else if (pathname === '/app/decisions') page = <DecisionsPage />;
  else if ((r = m(/^\/app\/policies\/([^/]+)$/)) && reader) page = <PolicyDetail policyKey={decodeURIComponent(r[1]!)} session={session} />;
  else if (pathname === '/app/policies' && reader) page = <PoliciesPage session={session} />;
  else if (pathname === '/app/approvers' && reader) page = <ApproversPage session={session} />;
  else if (pathname === '/app/api-keys' && admin) page = <ApiKeysPage />;
  else if (pathname === '/app/audit' && reader) page = <AuditPage />;
  else if (pathname === '/app/usage' && reader) page = <UsagePage />;
  else if (settingsSection !== null && admin) page = <SettingsPage section={settingsSection} />;
  else if (pathname === '/app/settings/me') page = <MyAccountPage session={session} />;
  else if (pathname === '/app/integrations' && reader) page = <IntegrationsPage session={session} />;
  else if (pathname === '/app/' || pathname === '/app') page = <Inbox session={session} />;
  else page = <p role="alert">There is no page here{!admin ? ' (or it is not for your role)' : ''}.</p>;
  return (
    <Layout
      session={session}
      path={pathname}
      onSignOut={() => {
        signOut();
        setSession(null);
        navigate('/app/login');
      }}
    >
      {page}
    </Layout>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
