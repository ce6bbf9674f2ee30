import { newId, type Knex } from '@approvals/shared';
import type { PersonalChannels } from '../domain/plan';

export interface ContactRow {
  email: string | null;
  sms: string | null;
  chat_a: string | null;
  push_enabled: boolean;
  updated_at: Date;
}

export interface DeviceRow {
  id: string;
  platform: 'ios' | 'android';
  device_name: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

/** A person's own contact methods and push devices (the notifier's people tables). */
export function createPeopleStore(db: Knex) {
  return {
    contactMethods(org: string, user: string): Promise<ContactRow | undefined> {
      return db('contact_methods').where({ org_id: org, user_id: user }).first();
    },

    /** Replaces the set: fields left out are cleared. `person_email` (the session's) ties them to the approver record. */
    async replaceContactMethods(
      org: string,
      user: string,
      values: { email: string | null; sms: string | null; chat_a: string | null; push_enabled: boolean; person_email: string },
    ): Promise<ContactRow> {
      const [row] = await db('contact_methods')
        .insert({ org_id: org, user_id: user, ...values })
        .onConflict(['org_id', 'user_id'])
        .merge({ ...values, updated_at: db.fn.now() })
        .returning('*');
      return row;
    },

    /** Idempotent on (user, token); re-registering a revoked device reactivates it. */
    async registerDevice(org: string, user: string, d: { token: string; platform: 'ios' | 'android'; deviceName?: string }) {
      return db.transaction(async (trx) => {
        const existing: DeviceRow | undefined = await trx('push_devices').where({ org_id: org, user_id: user, token: d.token }).forUpdate().first();
        if (!existing) {
          const [row]: DeviceRow[] = await trx('push_devices')
            .insert({ id: newId('device'), org_id: org, user_id: user, token: d.token, platform: d.platform, device_name: d.deviceName ?? null })
            .returning('*');
          return { row, created: true, reactivated: false };
        }
        const [row]: DeviceRow[] = await trx('push_devices')
          .where({ id: existing.id })
          .update({ revoked_at: null, platform: d.platform, device_name: d.deviceName ?? existing.device_name })
          .returning('*');
        return { row, created: false, reactivated: existing.revoked_at !== null };
      });
    },

    devices(org: string, user: string): Promise<DeviceRow[]> {
      return db('push_devices').where({ org_id: org, user_id: user }).orderBy('created_at');
    },

    /**
     * The contact methods and active push devices of the people with these emails in the
     * org (matched by the email of the session that set them).
     */
    async personalChannels(org: string, emails: string[]): Promise<Map<string, PersonalChannels>> {
      const out = new Map<string, PersonalChannels>();
      if (emails.length === 0) return out;
      const rows: Array<{ user_id: string; person_email: string; sms: string | null; chat_a: string | null; push_enabled: boolean }> = await db(
        'contact_methods',
      )
        .where({ org_id: org })
        .whereIn(
          'person_email',
          emails.map((e) => e.toLowerCase()),
        );
      const pushUsers = rows.filter((r) => r.push_enabled).map((r) => r.user_id);
      const devices: Array<{ id: string; user_id: string }> = pushUsers.length
        ? await db('push_devices').where({ org_id: org }).whereIn('user_id', pushUsers).whereNull('revoked_at').orderBy('created_at').select('id', 'user_id')
        : [];
      for (const r of rows) {
        out.set(r.person_email, { sms: r.sms, devices: r.push_enabled ? devices.filter((d) => d.user_id === r.user_id).map((d) => d.id) : [] });
      }
      return out;
    },

    /** A push device by id, for sending (undefined once revoked). */
    activeDevice(id: string): Promise<{ id: string; org_id: string; user_id: string; token: string; platform: 'ios' | 'android' } | undefined> {
      return db('push_devices').where({ id }).whereNull('revoked_at').first('id', 'org_id', 'user_id', 'token', 'platform');
    },

    /** The provider said the device token is no longer valid. */
    async revokeById(id: string): Promise<void> {
      await db('push_devices').where({ id }).whereNull('revoked_at').update({ revoked_at: db.fn.now() });
    },

    /** Every active device of a user, in every org (the identity provider deleted the user). */
    async revokeAllOf(user: string): Promise<number> {
      return db('push_devices').where({ user_id: user }).whereNull('revoked_at').update({ revoked_at: db.fn.now() });
    },

    /** Soft revoke, idempotent; undefined for a device that is not this person's. */
    async revokeDevice(org: string, user: string, id: string): Promise<DeviceRow | undefined> {
      const existing: DeviceRow | undefined = await db('push_devices').where({ org_id: org, user_id: user, id }).first();
      if (!existing || existing.revoked_at) return existing;
      const [row]: DeviceRow[] = await db('push_devices').where({ id }).update({ revoked_at: db.fn.now() }).returning('*');
      return row;
    },
  };
}
export type PeopleStore = ReturnType<typeof createPeopleStore>;
