import { NotifierEndpoints, deliveriesTotal, type ServiceHost } from '@approvals/shared';
import type { DeliveryRow } from '../providers/provider';
import type { DeliveriesStore, NewDelivery } from '../store/deliveries.store';

/** A sign-in link lives 15 minutes: a few quick retries, then the mail is pointless. */
export const SIGN_IN_MAX_ATTEMPTS = 4;

/**
 * `svc.notifier.sign_in_mail` (the gateway's): one email delivery per sign-in link, planned
 * durably (keyed by the link's id, so a resend of the request plans nothing twice), then
 * sent by the worker like every other mail. The link stays sealed in the row; the worker
 * opens it as it renders (usecases/deliver.ts). No link, nothing planned: the same answer.
 */
export function registerSignInMailHandler(
  host: ServiceHost,
  deps: {
    deliveries: DeliveriesStore;
    worker: { wake(): void; free(): number; take(rows: DeliveryRow[]): void };
    unavailable: (channel: string, org: string) => Promise<string | null>;
  },
): void {
  host.handle(NotifierEndpoints.signInMail, async (r) => {
    const email = r.email.toLowerCase();
    const rows: NewDelivery[] = await Promise.all(
      r.links.map(async (l) => ({
        org: l.org,
        decisionId: l.id,
        eventId: l.id,
        kind: 'sign_in' as const,
        channel: 'email',
        target: email,
        payload: { org: l.org, role: l.role, purpose: l.purpose, linkSealed: l.linkSealed, expiresAt: l.expiresAt, invitedBy: l.invitedBy ?? null },
        maxAttempts: SIGN_IN_MAX_ATTEMPTS,
        skipReason: await deps.unavailable('email', l.org),
      })),
    );
    if (rows.length === 0) return { planned: 0 };
    const { inserted, held } = await deps.deliveries.plan(rows, deps.worker.free());
    if (held.length) deps.worker.take(held);
    if (inserted > held.length) deps.worker.wake();
    for (const row of rows) if (row.skipReason) deliveriesTotal.inc({ channel: 'email', outcome: 'skipped' });
    return { planned: inserted };
  });
}
