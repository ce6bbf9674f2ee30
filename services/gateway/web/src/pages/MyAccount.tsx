import { api } from '../api';
import type { Session } from '../auth';
import { CHANNEL_LABEL, PROVIDER_LABEL as NAMES } from '../../../../../shared/src/contracts/providers';
import type { ApiReply, MyChatLinks } from '../types';
import { ErrorBox, Loading, Status, useAction, useLoad, when } from '../ui';

type ChatLink = MyChatLinks['chat'][number];

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

type ContactMethods = ApiReply<'/v1/contact-methods/', 'get'>;

/** One way a decision reaches the person, and whether it is proven theirs. */
interface Reach {
  key: string;
  channel: string;
  address: string | null;
  /** Where it is kept: the approver record the org's decisions use, or the person's own contact methods. */
  from: 'approver record' | 'contact methods';
  state: 'verified' | 'pending' | 'failed' | 'not verified' | 'on' | 'off';
  since: string | null;
}

const CHANNEL_NAMES: Record<string, string> = { ...CHANNEL_LABEL, push: 'Push', esign: 'DocuSign', inbox: 'Inbox' };

/**
 * Every channel that reaches the person: their approver record's (verified, pending or
 * failed, as the org's decisions see them) and the contact methods they set themselves
 * (an address proven only when it is the signed-in email or a chat account linked above).
 */
export function reachOf(links: MyChatLinks, methods: ContactMethods | null, email: string): Reach[] {
  const rows: Reach[] = links.channels.map((c) => ({
    key: `a:${c.channel}`,
    channel: c.channel,
    address: c.endpoint,
    from: 'approver record',
    state: c.status,
    since: c.verifiedAt,
  }));
  if (methods) {
    const linkedSlack = links.chat.find((l) => l.provider === 'chatA' && l.status === 'verified')?.userId ?? null;
    const own = (channel: string, address: string | null, proven: boolean) =>
      address ? rows.push({ key: `c:${channel}`, channel, address, from: 'contact methods', state: proven ? 'verified' : 'not verified', since: null }) : 0;
    own('email', methods.email, methods.email?.toLowerCase() === email.toLowerCase());
    own('sms', methods.sms, false);
    own('chatA', methods.chatA, methods.chatA !== null && methods.chatA === linkedSlack);
    rows.push({ key: 'c:push', channel: 'push', address: null, from: 'contact methods', state: methods.pushEnabled ? 'on' : 'off', since: null });
  }
  return rows;
}

/** The signed-in person's account: their chat accounts, and every channel that reaches them with its state. */
export function MyAccountPage({ session }: { session: Session }) {
  const links = useLoad(() => api<MyChatLinks>('GET', '/v1/me/chat-links'), []);
  const methods = useLoad(() => api<ContactMethods>('GET', '/v1/contact-methods/'), []);
  const linked = new URLSearchParams(location.search).get('linked');
  const reach = links.data ? reachOf(links.data, methods.data ?? null, session.email) : [];
  return (
    <section>
      <h1>My account</h1>
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
          <h2>Chat accounts</h2>
          {links.data.chat.map((l) => (
            <ChatAccount key={l.provider} link={l} reload={links.reload} />
          ))}
          <h2>How decisions reach you</h2>
          {!links.data.approver ? (
            <p className="muted">You are not an approver in this organization yet: decisions reach you by email once you are named on one.</p>
          ) : null}
          <ErrorBox error={methods.error} />
          {reach.length ? (
            <table aria-label="How decisions reach you">
              <thead>
                <tr>
                  <th scope="col">Channel</th>
                  <th scope="col">Address</th>
                  <th scope="col">Kept in</th>
                  <th scope="col">State</th>
                </tr>
              </thead>
              <tbody>
                {reach.map((c) => (
                  <tr key={c.key}>
                    <td>{CHANNEL_NAMES[c.channel] ?? c.channel}</td>
                    <td>{c.address ? <code>{c.address}</code> : '—'}</td>
                    <td>{c.from === 'approver record' ? 'your approver record' : 'your contact methods'}</td>
                    <td>
                      <Status status={c.state} />
                      {c.since ? <small className="muted"> since {when(c.since)}</small> : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
        </>
      ) : null}
    </section>
  );
}
