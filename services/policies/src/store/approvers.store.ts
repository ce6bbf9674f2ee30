import { AppError, EVENT, enqueueEvents, isUniqueViolation, newId, type ApproverView, type Knex, type ResolvedApprover } from '@approvals/shared';
import { z } from 'zod';
import type { ApproverLinkChatRequest, ApproverRegisterBody, ApproverVerifyBody } from '@approvals/shared';

type RegisterInput = z.output<typeof ApproverRegisterBody>;
type VerifyInput = z.output<typeof ApproverVerifyBody>;
type LinkChatInput = z.output<typeof ApproverLinkChatRequest>;

interface ApproverRow {
  id: string;
  org_id: string;
  email: string;
  name: string | null;
  identity_user_id: string | null;
  disabled: boolean;
  created_at: Date;
  updated_at: Date;
}

/** Proven on registration: the address the person signed up with and the app inbox. */
const VERIFIED_CHANNELS = new Set(['email']);
const VERIFIED_METHODS = new Set(['inbox']);

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Who changes an approver, for the audit log (`evt.approver.*`). */
export interface ApproverActor {
  /** Actor id (a user or API key id); null for the system (the identity provider). */
  id: string | null;
  /** How people read it: an email, `API key <name>`, `identity provider`. */
  label: string | null;
  /** The person's email when the actor is a person: a change to their own record mails no notice. */
  email?: string;
}

export function createApproversStore(db: Knex) {
  async function view(trx: Knex, rows: ApproverRow[]): Promise<ApproverView[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    const [channels, methods] = await Promise.all([
      trx('approver_channels').whereIn('approver_id', ids).orderBy(['approver_id', 'channel']),
      trx('approver_methods').whereIn('approver_id', ids).orderBy(['approver_id', 'surface']),
    ]);
    return rows.map((r) => ({
      id: r.id,
      email: r.email,
      name: r.name,
      identityUserId: r.identity_user_id,
      disabled: r.disabled,
      channels: channels
        .filter((c: { approver_id: string }) => c.approver_id === r.id)
        .map((c: { channel: never; endpoint: string | null; status: never; verified_at: Date | null }) => ({
          channel: c.channel,
          endpoint: c.endpoint,
          status: c.status,
          verifiedAt: iso(c.verified_at),
        })),
      methods: methods
        .filter((m: { approver_id: string }) => m.approver_id === r.id)
        .map((m: { surface: never; resolved_ref: string | null; status: never; verified_at: Date | null }) => ({
          surface: m.surface,
          resolvedRef: m.resolved_ref,
          status: m.status,
          verifiedAt: iso(m.verified_at),
        })),
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
    }));
  }

  return {
    /**
     * Idempotent per (org, email): a second registration adds channels and methods it
     * did not have and fills labels, but never re-enables a disabled approver and never
     * downgrades a verified channel.
     */
    async register(org: string, input: RegisterInput, actor: ApproverActor): Promise<{ approver: ApproverView; created: boolean }> {
      return db.transaction(async (trx) => {
        const added: string[] = [];
        let labelsChanged = false;
        const inserted: ApproverRow[] = await trx('approvers')
          .insert({ id: newId('approver'), org_id: org, email: input.email, name: input.name ?? null, identity_user_id: input.identityUserId ?? null })
          .onConflict(['org_id', 'email'])
          .ignore()
          .returning('*');
        let row = inserted[0];
        const created = Boolean(row);
        if (!row) {
          row = await trx('approvers').where({ org_id: org, email: input.email }).forUpdate().first();
          const patch: Record<string, unknown> = {};
          if (input.name !== undefined && input.name !== row.name) patch.name = input.name;
          if (input.identityUserId !== undefined && input.identityUserId !== row.identity_user_id) patch.identity_user_id = input.identityUserId;
          if (Object.keys(patch).length) {
            [row] = await trx('approvers')
              .where({ id: row.id })
              .update({ ...patch, updated_at: trx.fn.now() })
              .returning('*');
            labelsChanged = true;
          }
        }
        const channels = [{ channel: 'email', endpoint: input.email }, ...(input.channels ?? [])];
        for (const c of channels) {
          const verified = VERIFIED_CHANNELS.has(c.channel);
          const [put] = await trx('approver_channels')
            .insert({
              approver_id: row.id,
              channel: c.channel,
              endpoint: c.endpoint ?? null,
              status: verified ? 'verified' : 'pending',
              verified_at: verified ? trx.fn.now() : null,
            })
            .onConflict(['approver_id', 'channel'])
            .ignore()
            .returning('channel');
          if (put && !created) added.push(`channel:${c.channel}`);
        }
        const methods = [{ surface: 'inbox', resolvedRef: undefined as string | undefined }, ...(input.methods ?? [])];
        for (const m of methods) {
          const verified = VERIFIED_METHODS.has(m.surface);
          const [put] = await trx('approver_methods')
            .insert({
              approver_id: row.id,
              surface: m.surface,
              resolved_ref: m.resolvedRef ?? null,
              status: verified ? 'verified' : 'pending',
              verified_at: verified ? trx.fn.now() : null,
            })
            .onConflict(['approver_id', 'surface'])
            .ignore()
            .returning('surface');
          if (put && !created) added.push(`method:${m.surface}`);
        }
        if (created || labelsChanged || added.length) {
          await enqueueEvents(trx, [
            {
              subject: EVENT.approverChanged,
              org,
              data: {
                approverId: row.id,
                email: row.email,
                change: created ? 'registered' : 'updated',
                actor: actor.id,
                actorLabel: actor.label,
                ...(added.length ? { added } : {}),
              },
            },
          ]);
        }
        const [approver] = await view(trx, [row]);
        return { approver, created };
      });
    },

    /** The orgs where this address has an enabled approver record (addresses are kept in lower case). */
    async orgsOf(email: string): Promise<string[]> {
      const rows: Array<{ org_id: string }> = await db('approvers').where({ email: email.toLowerCase(), disabled: false }).distinct('org_id').orderBy('org_id');
      return rows.map((r) => r.org_id);
    },

    async list(org: string): Promise<ApproverView[]> {
      return view(db, await db('approvers').where({ org_id: org }).orderBy('email'));
    },

    async get(org: string, id: string): Promise<ApproverView | undefined> {
      const row = await db('approvers').where({ org_id: org, id }).first();
      return row ? (await view(db, [row]))[0] : undefined;
    },

    /**
     * Disables or enables an approver. A change is announced (evt.approver.disabled /
     * enabled, through the outbox, in the same transaction): the decisions service then
     * refuses a disabled approver's votes on decisions already open.
     */
    async setDisabled(org: string, id: string, disabled: boolean, actor: ApproverActor, reason = 'admin'): Promise<ApproverView | undefined> {
      return db.transaction(async (trx) => {
        const cur: ApproverRow | undefined = await trx('approvers').where({ org_id: org, id }).forUpdate().first();
        if (!cur) return undefined;
        let row = cur;
        if (cur.disabled !== disabled) {
          [row] = await trx('approvers').where({ id }).update({ disabled, updated_at: trx.fn.now() }).returning('*');
          await enqueueEvents(trx, [
            {
              subject: disabled ? EVENT.approverDisabled : EVENT.approverEnabled,
              org,
              data: { approverId: id, email: cur.email, reason, actor: actor.id, actorLabel: actor.label },
            },
          ]);
        }
        return (await view(trx, [row]))[0];
      });
    },

    /** Approvers linked to an identity-provider user, in one org or all; `email` also matches in that org. */
    async byIdentity(identityUserId: string, scope: { org?: string; email?: string } = {}): Promise<ApproverRow[]> {
      const q = db('approvers').where((w) => {
        w.where({ identity_user_id: identityUserId });
        if (scope.email) w.orWhere({ email: scope.email.toLowerCase() });
      });
      if (scope.org) q.andWhere({ org_id: scope.org });
      return q;
    },

    /**
     * The identity provider changed a user: their approvers take the new name and primary
     * email (and their email channel follows). An email another approver of the org
     * already has is left as it was (the two records stay distinct). Answers how many changed.
     */
    async applyIdentity(identityUserId: string, change: { email?: string; name?: string | null }): Promise<number> {
      let updated = 0;
      for (const row of await db('approvers').where({ identity_user_id: identityUserId })) {
        const patch: Record<string, unknown> = {};
        if (change.name !== undefined && change.name !== row.name) patch.name = change.name;
        const email = change.email?.toLowerCase();
        if (email && email !== row.email) patch.email = email;
        if (Object.keys(patch).length === 0) continue;
        try {
          await db.transaction(async (trx) => {
            await trx('approvers')
              .where({ id: row.id })
              .update({ ...patch, updated_at: trx.fn.now() });
            if (patch.email)
              await trx('approver_channels').where({ approver_id: row.id, channel: 'email', endpoint: row.email }).update({ endpoint: patch.email });
          });
          updated++;
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
          if (patch.name !== undefined) {
            await db('approvers').where({ id: row.id }).update({ name: patch.name, updated_at: db.fn.now() });
            updated++;
          }
        }
      }
      return updated;
    },

    /**
     * An admin sets or verifies a channel endpoint or a method's ref (proof-and-reach.md
     * section 6: nobody else may). Audited (`evt.approver.changed`, `endpoint_set`, before and
     * after), and the approver is mailed a notice unless they set their own.
     */
    async verify(org: string, id: string, input: VerifyInput, actor: ApproverActor): Promise<ApproverView | undefined> {
      return db.transaction(async (trx) => {
        const row = await trx('approvers').where({ org_id: org, id }).forUpdate().first();
        if (!row) return undefined;
        const status = input.status ?? 'verified';
        const verifiedAt = status === 'verified' ? trx.fn.now() : null;
        const before = input.channel
          ? await trx('approver_channels').where({ approver_id: id, channel: input.channel }).first('endpoint', 'status')
          : input.surface
            ? await trx('approver_methods').where({ approver_id: id, surface: input.surface }).first('resolved_ref as endpoint', 'status')
            : undefined;
        if (input.channel) {
          // A verified channel with no address would be a promise nobody can keep.
          if (input.endpoint === undefined && status === 'verified') {
            const known = await trx('approver_channels').where({ approver_id: id, channel: input.channel }).first('endpoint');
            if (!known?.endpoint) {
              throw new AppError(
                'invalid_request',
                `body.endpoint: no ${input.channel} endpoint is known for this approver: send the endpoint being verified`,
                {
                  issues: [{ path: 'body.endpoint', message: `required: no ${input.channel} endpoint is known for this approver` }],
                },
              );
            }
          }
          const values: Record<string, unknown> = { approver_id: id, channel: input.channel, status, verified_at: verifiedAt };
          if (input.endpoint !== undefined) values.endpoint = input.endpoint;
          await trx('approver_channels').insert(values).onConflict(['approver_id', 'channel']).merge();
        } else if (input.surface) {
          const values: Record<string, unknown> = { approver_id: id, surface: input.surface, status, verified_at: verifiedAt };
          if (input.resolvedRef !== undefined) values.resolved_ref = input.resolvedRef;
          await trx('approver_methods').insert(values).onConflict(['approver_id', 'surface']).merge();
        }
        const [updated] = await trx('approvers').where({ id }).update({ updated_at: trx.fn.now() }).returning('*');
        if (input.channel || input.surface) {
          const endpoint = (input.channel ? input.endpoint : input.resolvedRef) ?? before?.endpoint ?? null;
          await enqueueEvents(trx, [
            {
              subject: EVENT.approverChanged,
              org,
              data: {
                approverId: id,
                email: row.email,
                change: 'endpoint_set',
                actor: actor.id,
                actorLabel: actor.label,
                ...(input.channel ? { channel: input.channel } : { surface: input.surface }),
                before: before ? { endpoint: before.endpoint ?? null, status: before.status } : null,
                after: { endpoint, status },
                mailNotice: actor.email?.toLowerCase() !== row.email,
              },
            },
          ]);
        }
        return (await view(trx, [updated]))[0];
      });
    },

    /**
     * The DocuSign user id of the signer of an envelope completed under this approver's
     * email, kept on their verified esign method when it has no ref yet. Answers whether it
     * was kept.
     */
    async learnEsignRef(org: string, email: string, userId: string, envelopeId: string): Promise<boolean> {
      return db.transaction(async (trx) => {
        const row: ApproverRow | undefined = await trx('approvers').where({ org_id: org, email }).first();
        if (!row) return false;
        const [updated] = await trx('approver_methods')
          .where({ approver_id: row.id, surface: 'esign', status: 'verified' })
          .whereNull('resolved_ref')
          .update({ resolved_ref: userId })
          .returning('approver_id');
        if (!updated) return false;
        await enqueueEvents(trx, [
          {
            subject: EVENT.approverChanged,
            org,
            data: {
              approverId: row.id,
              email: row.email,
              change: 'learned',
              actor: null,
              actorLabel: `DocuSign (envelope ${envelopeId})`,
              surface: 'esign',
              before: { endpoint: null, status: 'verified' },
              after: { endpoint: userId, status: 'verified' },
            },
          },
        ]);
        return true;
      });
    },

    /**
     * A person's own chat account, proven by the surfaces service (the provider's sign-in,
     * or Slack's directory under their verified email): it becomes the verified chatA/chatB
     * endpoint of their approver record, registered when there is none. `endpoint` null
     * unlinks: no endpoint, pending (undefined when there is no record). A change (and only
     * a change: a repeat is a no-op) emits evt.approver.chat_link_changed in the same
     * transaction, for the audit log.
     */
    async linkChat(input: LinkChatInput): Promise<ApproverView | undefined> {
      const { org, email, channel, endpoint, via } = input;
      return db.transaction(async (trx) => {
        let row: ApproverRow | undefined = await trx('approvers').where({ org_id: org, email }).forUpdate().first();
        let registered = false;
        if (!row) {
          if (endpoint === null) return undefined;
          // Registered like POST /v1/approvers/ would (email and inbox proven by the address).
          [row] = await trx('approvers')
            .insert({ id: newId('approver'), org_id: org, email })
            .onConflict(['org_id', 'email'])
            .ignore()
            .returning('*');
          row ??= await trx('approvers').where({ org_id: org, email }).forUpdate().first();
          registered = true;
          await trx('approver_channels')
            .insert({ approver_id: row!.id, channel: 'email', endpoint: email, status: 'verified', verified_at: trx.fn.now() })
            .onConflict(['approver_id', 'channel'])
            .ignore();
          await trx('approver_methods')
            .insert({ approver_id: row!.id, surface: 'inbox', resolved_ref: null, status: 'verified', verified_at: trx.fn.now() })
            .onConflict(['approver_id', 'surface'])
            .ignore();
        }
        const id = row!.id;
        const before: { endpoint: string | null; status: string } | undefined = await trx('approver_channels')
          .where({ approver_id: id, channel })
          .first('endpoint', 'status');
        const status = endpoint === null ? 'pending' : 'verified';
        // Unlinking a chat the record does not have changes nothing (a pending chatA row
        // without an id would have the person looked up by email in Slack: not asked for).
        const changed =
          endpoint === null
            ? Boolean(before) && (before!.endpoint !== null || before!.status !== status)
            : !before || before.endpoint !== endpoint || before.status !== status;
        if (changed) {
          await trx('approver_channels')
            .insert({ approver_id: id, channel, endpoint, status, verified_at: endpoint === null ? null : trx.fn.now() })
            .onConflict(['approver_id', 'channel'])
            .merge();
          [row] = await trx('approvers').where({ id }).update({ updated_at: trx.fn.now() }).returning('*');
          await enqueueEvents(trx, [
            {
              subject: EVENT.approverChatLinkChanged,
              org,
              data: { approverId: id, email, channel, endpoint, previousEndpoint: before?.endpoint ?? null, via, actor: email, registered },
            },
          ]);
        }
        return (await view(trx, [row!]))[0];
      });
    },

    /** Registered approvers among `emails`, as resolved approvers. Unregistered ones are absent. */
    async lookup(org: string, emails: string[]): Promise<ResolvedApprover[]> {
      if (emails.length === 0) return [];
      const rows = await db('approvers').where({ org_id: org }).whereIn('email', emails);
      return (await view(db, rows)).map((a) => ({
        email: a.email,
        approverId: a.id,
        registered: true,
        disabled: a.disabled,
        channels: a.channels,
        methods: a.methods,
      }));
    },
  };
}
export type ApproversStore = ReturnType<typeof createApproversStore>;
