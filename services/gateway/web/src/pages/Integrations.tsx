import { useState } from 'react';
import type { ApiReply, IntegrationView } from '../types';
import { api } from '../api';
import type { Session } from '../auth';
import { ErrorBox, Field, Loading, useAction, useLoad } from '../ui';
import { PROVIDER_LABEL as NAMES } from '../../../../../shared/src/contracts/providers';

/** `installUrl` only for admins: anyone else sees `{installed: false}`. */
function Chat({ provider, session }: { provider: 'chatA' | 'chatB'; session: Session }) {
  const view = useLoad(() => api<IntegrationView>('GET', `/v1/integrations/${provider}`), [provider]);
  const installed = view.data?.installed === true;
  const channels = useLoad(
    () =>
      installed ? api<ApiReply<'/v1/integrations/chatA/channels', 'get'>>('GET', `/v1/integrations/${provider}/channels`) : Promise.resolve({ channels: [] }),
    [installed],
  );
  const [channel, setChannel] = useState('');
  const act = useAction();
  const [sent, setSent] = useState<string | null>(null);
  const admin = session.role === 'admin';
  const name = NAMES[provider];
  return (
    <section aria-label={name}>
      <h2>{name}</h2>
      {view.error ? <ErrorBox error={view.error} /> : null}
      {!view.data && !view.error ? <Loading what={name} /> : null}
      {view.data && !view.data.installed ? (
        view.data.installUrl ? (
          <p>
            <a className="button" href={view.data.installUrl}>
              Connect {name}
            </a>
          </p>
        ) : (
          <p className="muted">Not connected. An admin of your organization connects {name}.</p>
        )
      ) : null}
      {view.data && view.data.installed ? (
        <>
          <p>
            Connected to <strong>{view.data.name ?? view.data.teamId ?? view.data.guildId}</strong>. New decisions are announced in{' '}
            {view.data.channel ? (
              <code>{channels.data?.channels.find((c) => c.id === (view.data as { channel: string }).channel)?.name ?? view.data.channel}</code>
            ) : (
              'no channel yet'
            )}
            .
          </p>
          {admin ? (
            <form
              onSubmit={(e) => {
                e.preventDefault();
                void act.run(async () => {
                  await api('PUT', `/v1/integrations/${provider}/channel`, { channelId: channel });
                  view.reload();
                });
              }}
            >
              <Field label={`${name} channel for announcements`}>
                <select value={channel} onChange={(e) => setChannel(e.target.value)} required>
                  <option value="">Choose a channel</option>
                  {(channels.data?.channels ?? []).map((c) => (
                    <option key={c.id} value={c.id}>
                      #{c.name}
                    </option>
                  ))}
                </select>
              </Field>
              <div className="row">
                <button type="submit" disabled={act.busy}>
                  Save channel
                </button>
                <button
                  type="button"
                  disabled={act.busy || !view.data.channel}
                  onClick={() =>
                    act.run(async () => {
                      const r = await api<ApiReply<'/v1/integrations/chatA/test', 'post'>>('POST', `/v1/integrations/${provider}/test`);
                      setSent(`Test message sent to ${r.channel}.`);
                    })
                  }
                >
                  Send a test message
                </button>
              </div>
              {sent ? <p role="status">{sent}</p> : null}
              <ErrorBox error={act.error ?? channels.error} />
            </form>
          ) : null}
          {admin && provider === 'chatA' ? (
            <Deliberation
              current={view.data.deliberation ?? { enabled: false, channelId: null }}
              channels={channels.data?.channels ?? []}
              onSaved={view.reload}
            />
          ) : null}
        </>
      ) : null}
    </section>
  );
}

export function IntegrationsPage({ session }: { session: Session }) {
  const installed = new URLSearchParams(location.search).get('installed');
  return (
    <section>
      <h1>Integrations</h1>
      {installed === 'chatA' || installed === 'chatB' ? (
        <p role="status" className="notice">
          {NAMES[installed]} is connected.
        </p>
      ) : null}
      <Chat provider="chatA" session={session} />
      <Chat provider="chatB" session={session} />
    </section>
  );
}

/** Slack deliberation: a thread per decision in one channel, a reply per vote (admin). */
function Deliberation(props: { current: { enabled: boolean; channelId: string | null }; channels: Array<{ id: string; name: string }>; onSaved: () => void }) {
  const [channel, setChannel] = useState(props.current.channelId ?? '');
  const act = useAction();
  const [said, setSaid] = useState<string | null>(null);
  const put = (enabled: boolean) =>
    act.run(async () => {
      setSaid(null);
      await api('PUT', '/v1/integrations/chatA/deliberation', enabled ? { enabled, channelId: channel } : { enabled });
      setSaid(enabled ? 'Deliberation is on.' : 'Deliberation is off.');
      props.onSaved();
    });
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void put(true);
      }}
    >
      <h3>Deliberation</h3>
      <p className="muted">
        {props.current.enabled
          ? `On: each decision gets a thread in ${props.channels.find((c) => c.id === props.current.channelId)?.name ?? props.current.channelId}, each vote a reply.`
          : 'Off. When on, each decision gets a thread in one channel and each vote a reply in it.'}
      </p>
      <Field label="Slack channel for deliberation">
        <select value={channel} onChange={(e) => setChannel(e.target.value)} required>
          <option value="">Choose a channel</option>
          {props.channels.map((c) => (
            <option key={c.id} value={c.id}>
              #{c.name}
            </option>
          ))}
        </select>
      </Field>
      <div className="row">
        <button type="submit" disabled={act.busy}>
          Turn deliberation on
        </button>
        {props.current.enabled ? (
          <>
            <button type="button" disabled={act.busy} onClick={() => void put(false)}>
              Turn deliberation off
            </button>
            <button
              type="button"
              disabled={act.busy}
              onClick={() =>
                act.run(async () => {
                  const r = await api<ApiReply<'/v1/integrations/chatA/deliberation/test', 'post'>>('POST', '/v1/integrations/chatA/deliberation/test');
                  setSaid(`Test thread started in ${r.channel}.`);
                })
              }
            >
              Test deliberation
            </button>
          </>
        ) : null}
      </div>
      {said ? <p role="status">{said}</p> : null}
      <ErrorBox error={act.error} />
    </form>
  );
}
