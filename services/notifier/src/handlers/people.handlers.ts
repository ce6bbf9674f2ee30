import {
  AppError,
  ApproversEndpoints,
  NotifierEndpoints,
  actorLabelOf,
  actorOf,
  withStatus,
  type Bus,
  type Principal,
  type ServiceHost,
} from '@approvals/shared';
import type { DeliveriesStore } from '../store/deliveries.store';
import type { ContactRow, DeviceRow, PeopleStore } from '../store/people.store';
import type { Engines } from '../usecases/engines';
import type { Callbacks } from '../usecases/callbacks';

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

export function registerNotifierHandlers(
  host: ServiceHost,
  deps: { people: PeopleStore; deliveries: DeliveriesStore; engines: Engines; callbacks: Callbacks; bus: Bus },
): void {
  const { people } = deps;
  const E = NotifierEndpoints;
  const contactView = (r?: ContactRow) => ({
    email: r?.email ?? null,
    sms: r?.sms ?? null,
    chatA: r?.chat_a ?? null,
    pushEnabled: r?.push_enabled ?? false,
    updatedAt: r ? r.updated_at.toISOString() : null,
  });

  /**
   * A Slack id in contact methods proves nothing (anyone can type anyone's): it is taken
   * only when it is the one the person linked (their approver record's verified chatA
   * endpoint, proven by Slack: docs/chat.md), and even then it is not what reaches them:
   * the record is.
   */
  async function refuseUnlinkedChat(org: string, email: string, chatA: string | undefined): Promise<void> {
    if (chatA === undefined) return;
    const { approvers } = await deps.bus.call(ApproversEndpoints.lookup, { org, emails: [email] });
    const linked = approvers[0]?.channels.find((c) => c.channel === 'chatA' && c.status === 'verified')?.endpoint ?? null;
    if (linked === chatA) return;
    throw new AppError(
      'chat_account_not_linked',
      `Slack user ${chatA} is not the Slack account linked to you: link yours with "Sign in with Slack" (POST /v1/integrations/chatA/link) or by your email (POST /v1/me/chat-links/chatA/lookup)`,
      { linked },
    );
  }

  host.handle(E.contactMethodsGet, async (r) => contactView(await people.contactMethods(r.org, userOf(r.principal))));
  host.handle(E.contactMethodsPut, async (r) => {
    const user = userOf(r.principal);
    const email = personOf(r.principal);
    await refuseUnlinkedChat(r.org, email, r.body.chatA);
    return contactView(
      await people.replaceContactMethods(r.org, user, {
        email: r.body.email ?? null,
        sms: r.body.sms ?? null,
        chat_a: r.body.chatA ?? null,
        push_enabled: r.body.pushEnabled ?? false,
        person_email: email,
      }),
    );
  });
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

  // Callbacks per org (admin only at the gateway): the signing secret, shown once by a rotation.
  host.handle(E.callbackSettingsGet, async (r) => deps.callbacks.view(r.org));
  host.handle(E.callbackSecretRotate, async (r) => deps.callbacks.rotate(r.org, { actor: actorOf(r.principal), actorLabel: actorLabelOf(r.principal) }));
  host.handle(E.revokeUserDevices, async (r) => ({ revoked: await people.revokeAllOf(r.userId) }));

  host.handle(E.deliveries, async (r) => ({
    deliveries: (await deps.deliveries.forDecision(r.org, r.decisionId)).map(
      (d: {
        id: string;
        kind: string;
        channel: string;
        target: string;
        status: 'pending';
        attempts: number;
        last_error: string | null;
        event_id: string;
        created_at: Date;
        sent_at: Date | null;
      }) => ({
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
