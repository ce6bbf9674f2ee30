import { useState } from 'react';
import type { ApiReply } from '../../types';
import { api } from '../../api';
import { ErrorBox, Loading, useAction, useLoad, when } from '../../ui';
import { ShownOnce } from './parts';

type View = ApiReply<'/v1/settings/callbacks', 'get'>;
type Rotated = ApiReply<'/v1/settings/callbacks/rotate', 'post'>;

/** The org's callback signing secret (admin): its state, and a rotation that shows the new one once. */
export function CallbacksPage() {
  const view = useLoad(() => api<View>('GET', '/v1/settings/callbacks'), []);
  const [rotated, setRotated] = useState<Rotated | null>(null);
  const act = useAction();
  if (view.error) return <ErrorBox error={view.error} />;
  if (!view.data) return <Loading what="callback settings" />;
  const v = view.data;
  return (
    <div>
      <h2>Callbacks</h2>
      <p className="muted">
        Decision callbacks (<code>callbackUrl</code>) are signed with the organization’s secret (Standard Webhooks: <code>webhook-id</code>,{' '}
        <code>webhook-timestamp</code>, <code>webhook-signature</code>). After a rotation the previous secret signs alongside the new one for 24 hours, so
        receivers can switch without missing a callback.
      </p>
      <dl aria-label="Callback secret">
        <div>
          <dt>Signing secret</dt>
          <dd>{v.secretSet ? `set ${when(v.createdAt)}` : 'none yet: callbacks wait (retried) until one is made, by a rotation'}</dd>
        </div>
        <div>
          <dt>Previous secret signs until</dt>
          <dd>{v.previousUntil ? when(v.previousUntil) : '—'}</dd>
        </div>
      </dl>
      {rotated ? (
        <ShownOnce label="New callback signing secret" secret={rotated.secret}>
          <p>{rotated.previousUntil ? `The previous secret still signs until ${when(rotated.previousUntil)}.` : 'There was no previous secret.'}</p>
        </ShownOnce>
      ) : null}
      <button
        type="button"
        disabled={act.busy}
        onClick={() =>
          act.run(async () => {
            setRotated(await api<Rotated>('POST', '/v1/settings/callbacks/rotate'));
            view.reload();
          })
        }
      >
        Rotate the signing secret
      </button>
      <ErrorBox error={act.error} />
    </div>
  );
}
