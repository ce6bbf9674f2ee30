import { AppError, NotifierEndpoints, newId, withStatus, type Knex, type Principal, type ServiceHost } from '@approvals/shared';
import type { DeliveriesStore } from '../store/deliveries.store';

function userOf(p: Principal): string {
  if (p.kind !== 'user') throw new AppError('forbidden', 'contact methods and devices belong to a signed-in person');
  return p.userId;
}

const deviceView = (r: { id: string; platform: 'ios' | 'android'; device_name: string | null; created_at: Date; revoked_at: Date | null }) => ({
  id: r.id,
  platform: r.platform,
  deviceName: r.device_name,
  createdAt: r.created_at.toISOString(),
  revokedAt: r.revoked_at ? r.revoked_at.toISOString() : null,
});

export function registerNotifierHandlers(host: ServiceHost, deps: { db: Knex; deliveries: DeliveriesStore }): void {
  const { db } = deps;
  const E = NotifierEndpoints;
  const contactView = (r?: { email: string | null; sms: string | null; chat_a: string | null; push_enabled: boolean; updated_at: Date }) => ({
    email: r?.email ?? null,
    sms: r?.sms ?? null,
    chatA: r?.chat_a ?? null,
    pushEnabled: r?.push_enabled ?? false,
    updatedAt: r ? r.updated_at.toISOString() : null,
  });

  host.handle(E.contactMethodsGet, async (r) => contactView(await db('contact_methods').where({ org_id: r.org, user_id: userOf(r.principal) }).first()));

  /** PUT replaces the set: fields left out are cleared. */
  host.handle(E.contactMethodsPut, async (r) => {
    const values = { email: r.body.email ?? null, sms: r.body.sms ?? null, chat_a: r.body.chatA ?? null, push_enabled: r.body.pushEnabled ?? false };
    const [row] = await db('contact_methods')
      .insert({ org_id: r.org, user_id: userOf(r.principal), ...values })
      .onConflict(['org_id', 'user_id'])
      .merge({ ...values, updated_at: db.fn.now() })
      .returning('*');
    return contactView(row);
  });

  /** Idempotent on (user, token); re-registering a revoked device reactivates it. */
  host.handle(E.pushDeviceRegister, async (r) => {
    const user = userOf(r.principal);
    return db.transaction(async (trx) => {
      const existing = await trx('push_devices').where({ org_id: r.org, user_id: user, token: r.body.token }).forUpdate().first();
      if (!existing) {
        const [row] = await trx('push_devices')
          .insert({ id: newId('device'), org_id: r.org, user_id: user, token: r.body.token, platform: r.body.platform, device_name: r.body.deviceName ?? null })
          .returning('*');
        return withStatus(201, { ...deviceView(row), created: true, reactivated: false });
      }
      const [row] = await trx('push_devices')
        .where({ id: existing.id })
        .update({ revoked_at: null, platform: r.body.platform, device_name: r.body.deviceName ?? existing.device_name })
        .returning('*');
      return withStatus(200, { ...deviceView(row), created: false, reactivated: existing.revoked_at !== null });
    });
  });

  host.handle(E.pushDeviceList, async (r) => ({
    devices: (await db('push_devices').where({ org_id: r.org, user_id: userOf(r.principal) }).orderBy('created_at')).map(deviceView),
  }));

  /** Soft revoke, idempotent; another person's device answers as a missing one. */
  host.handle(E.pushDeviceRevoke, async (r) => {
    const user = userOf(r.principal);
    const existing = await db('push_devices').where({ org_id: r.org, user_id: user, id: r.params.id }).first();
    if (!existing) throw new AppError('not_found', 'device not found');
    if (existing.revoked_at) return deviceView(existing);
    const [row] = await db('push_devices').where({ id: existing.id }).update({ revoked_at: db.fn.now() }).returning('*');
    return deviceView(row);
  });

  host.handle(E.deliveries, async (r) => ({
    deliveries: (await deps.deliveries.forDecision(r.org, r.decisionId)).map(
      (d: { id: string; kind: string; channel: string; target: string; status: 'pending'; attempts: number; last_error: string | null; event_id: string; created_at: Date; sent_at: Date | null }) => ({
        id: d.id,
        kind: d.kind,
        channel: d.channel,
        target: d.target,
        status: d.status,
        attempts: d.attempts,
        lastError: d.last_error,
        eventId: d.event_id,
        createdAt: d.created_at.toISOString(),
        sentAt: d.sent_at ? d.sent_at.toISOString() : null,
      }),
    ),
  }));
}
