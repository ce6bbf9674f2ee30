import { AppError, NotifierEndpoints, actorLabelOf, actorOf, withStatus, type Principal, type ServiceHost } from '@approvals/shared';
import type { DeliveriesStore } from '../store/deliveries.store';
import type { ContactRow, DeviceRow, PeopleStore } from '../store/people.store';
import type { Engines } from '../usecases/engines';

function personOf(p: Principal): string {
  if (p.kind !== 'user') throw new AppError('forbidden', 'contact methods and devices belong to a signed-in person');
  return p.email.toLowerCase();
}

function userOf(p: Principal): string {
  if (p.kind !== 'user') throw new AppError('forbidden', 'contact methods and devices belong to a signed-in person');
  return p.userId;
}

const deviceView = (r: DeviceRow) => ({
  id: r.id,
  platform: r.platform,
  deviceName: r.device_name,
  createdAt: r.created_at.toISOString(),
  revokedAt: r.revoked_at ? r.revoked_at.toISOString() : null,
});

export function registerNotifierHandlers(host: ServiceHost, deps: { people: PeopleStore; deliveries: DeliveriesStore; engines: Engines }): void {
  const { people } = deps;
  const E = NotifierEndpoints;
  const contactView = (r?: ContactRow) => ({
    email: r?.email ?? null,
    sms: r?.sms ?? null,
    chatA: r?.chat_a ?? null,
    pushEnabled: r?.push_enabled ?? false,
    updatedAt: r ? r.updated_at.toISOString() : null,
  });

  host.handle(E.contactMethodsGet, async (r) => contactView(await people.contactMethods(r.org, userOf(r.principal))));
  host.handle(E.contactMethodsPut, async (r) =>
    contactView(await people.replaceContactMethods(r.org, userOf(r.principal), { email: r.body.email ?? null, sms: r.body.sms ?? null, chat_a: r.body.chatA ?? null, push_enabled: r.body.pushEnabled ?? false, person_email: personOf(r.principal) })),
  );
  host.handle(E.pushDeviceRegister, async (r) => {
    const out = await people.registerDevice(r.org, userOf(r.principal), r.body);
    return withStatus(out.created ? 201 : 200, { ...deviceView(out.row), created: out.created, reactivated: out.reactivated });
  });
  host.handle(E.pushDeviceList, async (r) => ({ devices: (await people.devices(r.org, userOf(r.principal))).map(deviceView) }));
  /** Another person's device answers as a missing one. */
  host.handle(E.pushDeviceRevoke, async (r) => {
    const row = await people.revokeDevice(r.org, userOf(r.principal), r.params.id);
    if (!row) throw new AppError('not_found', 'device not found');
    return deviceView(row);
  });

  // Engines per org (settings routes are admin only at the gateway).
  host.handle(E.engineSettingsGet, async (r) => deps.engines.view(r.org));
  host.handle(E.engineSettingsPut, async (r) => deps.engines.put(r.org, r.body, { actor: actorOf(r.principal), actorLabel: actorLabelOf(r.principal) }));
  host.handle(E.engineTest, async (r) => deps.engines.test(r.org, r.params.engine));
  host.handle(E.engineConfigured, async (r) => deps.engines.configured(r.org, r.engine));
  host.handle(E.revokeUserDevices, async (r) => ({ revoked: await people.revokeAllOf(r.userId) }));

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
