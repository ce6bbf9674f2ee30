import { EVENT, PROVIDER_LABEL, enqueueEvents, type ChatProvider, type Knex, type NewEvent, type OrgCache } from '@approvals/shared';
import type { StatePurpose } from '../domain/chat';

export interface InstallationRow {
  org_id: string;
  provider: ChatProvider;
  workspace_id: string;
  name: string | null;
  bot_token_sealed: string | null;
  bot_user_id: string | null;
  /** Slack only, from `@slack/oauth`'s Installation (null on rows installed before it). */
  bot_id?: string | null;
  app_id?: string | null;
  bot_scopes?: string | null;
  installer_user_id?: string | null;
  channel_id: string | null;
  deliberation_enabled: boolean;
  deliberation_channel_id: string | null;
  installed_at: Date;
}

export interface ChatMessageRow {
  org_id: string;
  provider: ChatProvider;
  decision_id: string;
  kind: 'notice' | 'announce' | 'thread';
  delivery_id: string | null;
  approver_email: string | null;
  user_id: string | null;
  channel_id: string;
  message_id: string;
  /** The Slack user was found by `users.lookupByEmail` under the approver's email (Slack's directory is the proof). */
  resolved_by_email?: boolean;
}

export interface StateRow {
  id: string;
  org_id: string;
  provider: ChatProvider;
  purpose: StatePurpose;
  /** Who asked: the admin installing, or the person linking their own account. */
  user_id: string | null;
  email: string | null;
  /** Hex SHA-256 of the browser-binding nonce of the browser that asked. */
  browser_hash: string | null;
  expires_at: Date;
  used_at: Date | null;
}

/** Chat installations, install states and posted messages: the SQL of the chat surfaces. */
/**
 * `installations` caches each org's installations (read on every new decision); every
 * write here is announced through `changed` (org, or null when the orgs are not known)
 * so every replica's cache drops it (bus/invalidation).
 */
/** Who changes an org's chat settings, for the audit log. */
export interface SettingsActor {
  actor: string | null;
  actorLabel: string | null;
}

/** An installation as the audit log shows it: never its token. */
const shown = (r: InstallationRow | undefined) =>
  r
    ? {
        workspaceId: r.workspace_id,
        name: r.name,
        channel: r.channel_id,
        deliberation: { enabled: r.deliberation_enabled, channelId: r.deliberation_channel_id },
      }
    : null;

/** `evt.settings.changed` of a chat installation (kind `integration.chatA` / `integration.chatB`). */
function settingsEvent(
  org: string,
  provider: ChatProvider,
  by: SettingsActor,
  before: InstallationRow | undefined,
  after: InstallationRow | undefined,
  change: string,
): NewEvent {
  return {
    subject: EVENT.settingsChanged,
    org,
    data: { kind: `integration.${provider}`, actor: by.actor, actorLabel: by.actorLabel, before: shown(before), after: { ...shown(after), change } },
  };
}

export function createChatStore(db: Knex, opts: { installations?: OrgCache<InstallationRow[]>; changed?: (org: string | null) => Promise<void> } = {}) {
  const changed = opts.changed ?? (async () => undefined);

  /** Changes columns of an org's installation with its audit event, in one transaction. */
  async function changeInstallation(
    org: string,
    provider: ChatProvider,
    values: Record<string, unknown>,
    by: SettingsActor,
    change: string,
  ): Promise<InstallationRow | undefined> {
    const row = await db.transaction(async (trx) => {
      const before: InstallationRow | undefined = await trx('chat_installations').where({ org_id: org, provider }).forUpdate().first();
      if (!before) return undefined;
      const [after]: InstallationRow[] = await trx('chat_installations')
        .where({ org_id: org, provider })
        .update({ ...values, updated_at: trx.fn.now() })
        .returning('*');
      await enqueueEvents(trx, [settingsEvent(org, provider, by, before, after, change)]);
      return after;
    });
    await changed(org);
    return row;
  }

  return {
    async createState(s: {
      id: string;
      org: string;
      provider: ChatProvider;
      purpose: StatePurpose;
      userId: string;
      email: string;
      browserHash: string;
      expiresAt: Date;
    }): Promise<void> {
      await db('chat_install_states').insert({
        id: s.id,
        org_id: s.org,
        provider: s.provider,
        purpose: s.purpose,
        user_id: s.userId,
        email: s.email,
        browser_hash: s.browserHash,
        expires_at: s.expiresAt,
      });
    },

    /** A state as minted (who asked, which browser), to check before spending it. */
    state(id: string): Promise<StateRow | undefined> {
      return db('chat_install_states').where({ id }).first('id', 'org_id', 'provider', 'purpose', 'user_id', 'email', 'browser_hash', 'expires_at', 'used_at');
    },

    /** Spends a state once: true the first time, before it expires; false after. */
    async claimState(id: string, org: string, provider: ChatProvider, purpose: StatePurpose, now: Date): Promise<boolean> {
      const rows = await db('chat_install_states')
        .where({ id, org_id: org, provider, purpose })
        .whereNull('used_at')
        .andWhere('expires_at', '>', now)
        .update({ used_at: now })
        .returning('id');
      return rows.length === 1;
    },

    /** Stores (or replaces, on a reinstall) the org's installation; channel settings are kept. Audited. */
    async install(
      org: string,
      provider: ChatProvider,
      i: {
        workspaceId: string;
        name: string | null;
        botTokenSealed: string | null;
        botUserId: string | null;
        slack?: { botId: string | null; appId: string | null; botScopes: string | null; installerUserId: string | null };
      },
      by: SettingsActor,
    ): Promise<void> {
      const values = {
        workspace_id: i.workspaceId,
        name: i.name,
        bot_token_sealed: i.botTokenSealed,
        bot_user_id: i.botUserId,
        bot_id: i.slack?.botId ?? null,
        app_id: i.slack?.appId ?? null,
        bot_scopes: i.slack?.botScopes ?? null,
        installer_user_id: i.slack?.installerUserId ?? null,
      };
      await db.transaction(async (trx) => {
        const before: InstallationRow | undefined = await trx('chat_installations').where({ org_id: org, provider }).forUpdate().first();
        const [after]: InstallationRow[] = await trx('chat_installations')
          .insert({ org_id: org, provider, ...values })
          .onConflict(['org_id', 'provider'])
          .merge({ ...values, installed_at: trx.fn.now(), updated_at: trx.fn.now() })
          .returning('*');
        await enqueueEvents(trx, [settingsEvent(org, provider, by, before, after, 'installed')]);
      });
      await changed(org);
    },

    installation(org: string, provider: ChatProvider): Promise<InstallationRow | undefined> {
      return db('chat_installations').where({ org_id: org, provider }).first();
    },

    /** Every chat installation of an org (one read, on every new decision). */
    installationsOf(org: string): Promise<InstallationRow[]> {
      const read = () => db('chat_installations').where({ org_id: org }) as Promise<InstallationRow[]>;
      return opts.installations ? opts.installations.get(org, 'all', read) : read();
    },

    byWorkspace(provider: ChatProvider, workspaceId: string): Promise<InstallationRow[]> {
      return db('chat_installations').where({ provider, workspace_id: workspaceId });
    },

    /** The app was uninstalled or its tokens revoked: the installation is removed (audited per org). Answers how many. */
    async removeWorkspace(provider: ChatProvider, workspaceId: string, why: string): Promise<number> {
      const n = await db.transaction(async (trx) => {
        const gone: InstallationRow[] = await trx('chat_installations').where({ provider, workspace_id: workspaceId }).delete().returning('*');
        const by = { actor: null, actorLabel: `${PROVIDER_LABEL[provider]} (${why})` };
        await enqueueEvents(
          trx,
          gone.map((row) => settingsEvent(row.org_id, provider, by, row, undefined, 'removed')),
        );
        return gone.length;
      });
      await changed(null);
      return n;
    },

    async setChannel(org: string, provider: ChatProvider, channelId: string, by: SettingsActor): Promise<InstallationRow | undefined> {
      return changeInstallation(org, provider, { channel_id: channelId }, by, 'channel_set');
    },

    async setDeliberation(
      org: string,
      provider: ChatProvider,
      enabled: boolean,
      channelId: string | null,
      by: SettingsActor,
    ): Promise<InstallationRow | undefined> {
      const values: Record<string, unknown> = { deliberation_enabled: enabled };
      if (channelId !== null) values.deliberation_channel_id = channelId;
      return changeInstallation(org, provider, values, by, 'deliberation_set');
    },

    messageOfDelivery(provider: ChatProvider, deliveryId: string): Promise<ChatMessageRow | undefined> {
      return db('chat_messages').where({ provider, delivery_id: deliveryId }).first();
    },

    /** Records a posted message; a second record for one delivery is ignored. */
    async recordMessage(m: ChatMessageRow): Promise<void> {
      await db('chat_messages').insert(m).onConflict(['provider', 'delivery_id']).ignore();
    },

    messagesOf(decisionId: string, kind?: ChatMessageRow['kind']): Promise<ChatMessageRow[]> {
      const q = db('chat_messages').where({ decision_id: decisionId }).orderBy('id');
      if (kind) q.andWhere({ kind });
      return q;
    },

    /** The message a click came from (Discord: its channel and id), which names the org. */
    messageById(provider: ChatProvider, channelId: string, messageId: string): Promise<ChatMessageRow | undefined> {
      return db('chat_messages').where({ provider, channel_id: channelId, message_id: messageId }).first();
    },

    async markUpdated(decisionId: string): Promise<void> {
      await db('chat_messages').where({ decision_id: decisionId }).update({ updated_at: db.fn.now() });
    },
  };
}
export type ChatStore = ReturnType<typeof createChatStore>;
