import { api } from '../api';
import { CHANNEL_LABEL, PROVIDER_LABEL as NAMES } from '../../../../../shared/src/contracts/providers';
import type { ApiReply, MyChatLinks } from '../types';

type ChatLink = MyChatLinks['chat'][number];
import type { Session } from '../auth';
import { ErrorBox, Loading, Status, useAction, useLoad, when } from '../ui';

/**
 * One chat provider: link the person's own account (the provider's sign-in; for Slack also
 * "find me by email"), or unlink it. Only a proven account is linked: nothing here takes an
 * id typed by hand.
 */
function ChatAccount({ link, reload }: { link: ChatLink; reload: () => void }) {
  const act = useAction();
  const name = NAMES[link.provider];
  const linked = link.userId !== null && link.status === 'verified';
  return (
    <section aria-label={`${name} account`}>
      <h3>{name}</h3>
      {!link.installed ? (
        <p className="muted">Your organization has not connected {name} yet.</p>
      ) : (
        <>
          <p>
            {linked ? (
              <>
                Linked to <code>{link.userId}</code> in {link.workspace} (since {when(link.verifiedAt)}).
              </>
            ) : (
              <>Not linked. Sign in with {name} to receive and answer decisions there.</>
            )}
          </p>
          <div className="row">
            <button
              type="button"
              disabled={act.busy}
              onClick={() =>
                act.run(async () => {
                  // The provider's sign-in; it comes back to /app/settings/me?linked=… in this browser.
                  const r = await api<ApiReply<'/v1/integrations/chatA/link', 'post'>>('POST', `/v1/integrations/${link.provider}/link`);
                  location.assign(r.authorizeUrl);
                })
              }
            >
              {linked ? `Link another ${name} account` : `Link ${name}`}
            </button>
            {link.provider === 'chatA' ? (
              <button
                type="button"
                disabled={act.busy}
                onClick={() =>
                  act.run(async () => {
                    await api('POST', '/v1/me/chat-links/chatA/lookup');
                    reload();
                  })
                }
              >
                Find me in Slack by email
              </button>
            ) : null}
            {link.userId !== null ? (
              <button
                type="button"
                disabled={act.busy}
                onClick={() =>
                  act.run(async () => {
                    await api('DELETE', `/v1/me/chat-links/${link.provider}`);
                    reload();
                  })
                }
              >
                Unlink {name}
              </button>
            ) : null}
          </div>
        </>
      )}
      <ErrorBox error={act.error} />
    </section>
  );
}

/** The signed-in person's own chat accounts and the state of each of their channels. */
export function MyAccountPage({ session }: { session: Session }) {
  const links = useLoad(() => api<MyChatLinks>('GET', '/v1/me/chat-links'), []);
  const linked = new URLSearchParams(location.search).get('linked');
  return (
    <section>
      <h1>My chat accounts</h1>
      <p className="muted">Signed in as {session.email}.</p>
      {linked === 'chatA' || linked === 'chatB' ? (
        <p role="status" className="notice">
          Your {NAMES[linked]} account is linked.
        </p>
      ) : null}
      <ErrorBox error={links.error} />
      {!links.data && !links.error ? <Loading what="your chat accounts" /> : null}
      {links.data ? (
        <>
          {links.data.chat.map((l) => (
            <ChatAccount key={l.provider} link={l} reload={links.reload} />
          ))}
          <h2>My channels</h2>
          {links.data.approver ? (
            <table>
              <caption className="muted">How decisions reach you</caption>
              <thead>
                <tr>
                  <th scope="col">Channel</th>
                  <th scope="col">Address</th>
                  <th scope="col">State</th>
                </tr>
              </thead>
              <tbody>
                {links.data.channels.map((c) => (
                  <tr key={c.channel}>
                    <td>{CHANNEL_LABEL[c.channel as keyof typeof CHANNEL_LABEL] ?? c.channel}</td>
                    <td>{c.endpoint ? <code>{c.endpoint}</code> : '—'}</td>
                    <td>
                      <Status status={c.status} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p className="muted">You are not an approver in this organization yet: decisions reach you by email once you are named on one.</p>
          )}
        </>
      ) : null}
    </section>
  );
}
