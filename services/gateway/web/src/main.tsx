import { StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import type { Me } from './types';
import { api } from './api';
import { can, currentSession, finishOidc, signIn, signOut, startOidc, type OidcConfig, type Role, type Session } from './auth';
import { DecisionPage } from './pages/Decision';
import { Inbox } from './pages/Inbox';
import { IntegrationsPage } from './pages/Integrations';
import { MyAccountPage } from './pages/MyAccount';
import { ApiKeysPage, ApproversPage, UsagePage } from './pages/Operators';
import { AuditPage } from './pages/Audit';
import { DecisionsPage } from './pages/Decisions';
import { PoliciesPage, PolicyDetail } from './pages/Policies';
import { SettingsPage } from './pages/Settings';
import { ErrorBox, Layout, messageOf, navigate, usePath } from './ui';
import './styles.css';

function Login({ onSession }: { onSession: (s: Session) => void }) {
  const params = new URLSearchParams(location.search);
  const [error, setError] = useState<string | null>(params.get('reason'));
  const [oidc, setOidc] = useState<OidcConfig | null>(null);
  const next = params.get('next') ?? '/app/';
  useEffect(() => {
    // `/app/login#token=<session JWT>`: the fragment never reaches a server or a log.
    const token = new URLSearchParams(location.hash.slice(1)).get('token');
    if (token) {
      history.replaceState(null, '', '/app/login');
      const s = signIn(token);
      if (s) {
        onSession(s);
        navigate(next.startsWith('/app/') ? next : '/app/');
        return;
      }
      setError('That sign-in link is not valid or has expired. Ask for a new one.');
    }
    void fetch('/app/config.json')
      .then((r) => r.json())
      .then(async (c: { oidc: OidcConfig | null }) => {
        setOidc(c.oidc);
        if (c.oidc && params.get('code')) {
          const done = await finishOidc(c.oidc, new URL(location.href));
          onSession(done.session);
          navigate(done.returnTo.startsWith('/app/') ? done.returnTo : '/app/');
        }
      })
      .catch((err) => setError(messageOf(err)));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  return (
    <main className="login">
      <h1>Approvals</h1>
      <ErrorBox error={error} />
      {oidc ? (
        <button type="button" onClick={() => startOidc(oidc, next).catch((err) => setError(messageOf(err)))}>
          Sign in
        </button>
      ) : (
        <p>
          Open the sign-in link you were given (<code>npm run admin -- session</code> prints one), or ask your administrator.
        </p>
      )}
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
  if ((r = m(/^\/app\/decisions\/([^/]+)$/))) page = <DecisionPage id={decodeURIComponent(r[1]!)} session={session} />;
  else if (pathname === '/app/decisions') page = <DecisionsPage />;
  else if ((r = m(/^\/app\/policies\/([^/]+)$/)) && reader) page = <PolicyDetail policyKey={decodeURIComponent(r[1]!)} session={session} />;
  else if (pathname === '/app/policies' && reader) page = <PoliciesPage session={session} />;
  else if (pathname === '/app/approvers' && reader) page = <ApproversPage session={session} />;
  else if (pathname === '/app/api-keys' && admin) page = <ApiKeysPage />;
  else if (pathname === '/app/audit' && reader) page = <AuditPage />;
  else if (pathname === '/app/usage' && reader) page = <UsagePage />;
  else if (pathname === '/app/settings' && admin) page = <SettingsPage />;
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
