import { z } from 'zod';
import { SUBJECT } from '../subjects';
import { Email, forwarded } from './common';
import { READ, RESENDABLE, endpoint } from './endpoint';

export const ContactMethods = z.strictObject({
  email: Email.optional(),
  sms: z.string().regex(/^\+[1-9][0-9]{3,14}$/, 'sms must be a phone number in E.164 form (+ and 4 to 15 digits)').optional(),
  chatA: z.string().min(1).max(200).optional(),
  pushEnabled: z.boolean().optional(),
});
export const ContactMethodsView = z.object({
  email: z.string().nullable(),
  sms: z.string().nullable(),
  chatA: z.string().nullable(),
  pushEnabled: z.boolean(),
  updatedAt: z.string().nullable(),
});

export const PushDeviceBody = z.strictObject({
  token: z.string().min(1).max(4096),
  platform: z.enum(['ios', 'android']),
  deviceName: z.string().max(200).optional(),
});
export const PushDeviceView = z.object({
  id: z.string(),
  platform: z.enum(['ios', 'android']),
  deviceName: z.string().nullable(),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
});
export const DeviceIdParams = z.strictObject({ id: z.string().min(1).max(100) });

export const NotifierEndpoints = {
  contactMethodsGet: endpoint(SUBJECT.notifier.contactMethodsGet, forwarded({}), ContactMethodsView, READ),
  contactMethodsPut: endpoint(SUBJECT.notifier.contactMethodsPut, forwarded({ body: ContactMethods }), ContactMethodsView, RESENDABLE),
  pushDeviceRegister: endpoint(SUBJECT.notifier.pushDeviceRegister, forwarded({ body: PushDeviceBody }), PushDeviceView.extend({ created: z.boolean(), reactivated: z.boolean() }), RESENDABLE),
  pushDeviceList: endpoint(SUBJECT.notifier.pushDeviceList, forwarded({}), z.object({ devices: z.array(PushDeviceView) }), READ),
  pushDeviceRevoke: endpoint(SUBJECT.notifier.pushDeviceRevoke, forwarded({ params: DeviceIdParams }), PushDeviceView, RESENDABLE),
  deliveries: endpoint(
    SUBJECT.notifier.deliveries,
    z.object({ org: z.string(), decisionId: z.string() }),
    z.object({
      deliveries: z.array(
        z.object({
          id: z.string(),
          kind: z.string(),
          channel: z.string(),
          target: z.string(),
          status: z.enum(['pending', 'sent', 'failed', 'skipped']),
          attempts: z.number(),
          lastError: z.string().nullable(),
          eventId: z.string(),
          createdAt: z.string(),
          sentAt: z.string().nullable(),
        }),
      ),
    }),
    READ,
  ),
  /** The identity provider deleted a user: their push devices are revoked in every org. */
  revokeUserDevices: endpoint(SUBJECT.notifier.revokeUserDevices, z.object({ userId: z.string().min(1) }), z.object({ revoked: z.number() }), RESENDABLE),
};
