import { randomBytes } from 'node:crypto';
import {
  AppError,
  EVENT,
  PROVIDER_LABEL,
  literalTargetRefusal,
  type AddressPolicy,
  type OrgCache,
  type OutboundClient,
  type SecretBox,
} from '@approvals/shared';
import type { z } from 'zod';
import type { EngineSettingsBody } from '@approvals/shared';
import type { NotifierConfig } from '../config';
import { ENGINES, sendEngineTest, type EngineName, type EngineTarget } from '../providers/engines';
import type { EngineSettingsRow, EnginesStore } from '../store/engines.store';

type Body = z.infer<typeof EngineSettingsBody>;

const secretContext = (org: string, engine: EngineName) => `engine:${engine}:${org}`;
const SECRET_FIELD: Record<EngineName, 'eventKey' | 'apiKey' | 'secretKey' | 'secret'> = {
  engineA: 'eventKey',
  engineB: 'apiKey',
  trigger: 'secretKey',
  bundled: 'secret',
};

/**
 * Engines per org: settings (secrets sealed, write-only; a bundled secret generated and
 * shown once), the fallback to the deployment's environment (INNGEST_*, TEMPORAL_*,
 * TRIGGER_*, ENGINE_BUNDLED_*; docs/operations.md "Environment"), and resolution of
 * where an org's engine events go. An org's URLs go through the guarded client (checked
 * at save and at every connect), the deployment's through the trusted one.
 */
export function createEngines(deps: {
  config: NotifierConfig;
  store: EnginesStore;
  secrets: SecretBox;
  guard: AddressPolicy;
  tenant: OutboundClient;
  trusted: OutboundClient;
  /** Settings rows per (org, engine), dropped when `changed` is announced (bus/invalidation). */
  cache?: OrgCache<EngineSettingsRow | null>;
  /** Announces a change of an org's settings to every replica's cache before the change is answered. */
  changed?: (org: string) => Promise<void>;
}) {
  const { config, store, secrets } = deps;

  function fromDeployment(engine: EngineName): EngineTarget | null {
    const http = deps.trusted;
    switch (engine) {
      case 'engineA':
        return config.INNGEST_URL && config.INNGEST_EVENT_KEY
          ? { engine, source: 'deployment', url: config.INNGEST_URL, secret: config.INNGEST_EVENT_KEY, http }
          : null;
      case 'engineB':
        return config.TEMPORAL_URL
          ? { engine, source: 'deployment', url: config.TEMPORAL_URL, namespace: config.TEMPORAL_NAMESPACE, secret: config.TEMPORAL_API_KEY, http }
          : null;
      case 'trigger':
        return config.TRIGGER_API_URL ? { engine, source: 'deployment', url: config.TRIGGER_API_URL, secret: config.TRIGGER_SECRET_KEY, http } : null;
      case 'bundled':
        return config.ENGINE_BUNDLED_URL ? { engine, source: 'deployment', url: config.ENGINE_BUNDLED_URL, secret: config.ENGINE_BUNDLED_SECRET, http } : null;
    }
  }

  function fromRow(row: EngineSettingsRow): EngineTarget {
    return {
      engine: row.engine,
      source: 'org',
      url: row.url,
      secret: row.secret_sealed ? secrets.open(row.secret_sealed, secretContext(row.org_id, row.engine)) : undefined,
      namespace: row.options.namespace,
      http: deps.tenant,
    };
  }

  function view(rows: EngineSettingsRow[], shown?: { bundled?: string }) {
    const by = new Map(rows.map((r) => [r.engine, r]));
    const a = by.get('engineA');
    const b = by.get('engineB');
    const t = by.get('trigger');
    const u = by.get('bundled');
    return {
      engineA: a ? { url: a.url, eventKeySet: Boolean(a.secret_sealed) } : null,
      engineB: b ? { url: b.url, namespace: b.options.namespace ?? 'default', apiKeySet: Boolean(b.secret_sealed) } : null,
      trigger: t ? { url: t.url, secretKeySet: Boolean(t.secret_sealed) } : null,
      bundled: u ? { url: u.url, secretSet: Boolean(u.secret_sealed), ...(shown?.bundled ? { secret: shown.bundled } : {}) } : null,
      deployment: {
        engineA: !!fromDeployment('engineA'),
        engineB: !!fromDeployment('engineB'),
        trigger: !!fromDeployment('trigger'),
        bundled: !!fromDeployment('bundled'),
      },
    };
  }

  async function settings(org: string, engine: EngineName): Promise<EngineSettingsRow | null> {
    const load = async () => (await store.get(org, engine)) ?? null;
    return deps.cache ? deps.cache.get(org, engine, load) : load();
  }

  async function resolve(org: string, engine: EngineName): Promise<EngineTarget | null> {
    const row = await settings(org, engine);
    return row ? fromRow(row) : fromDeployment(engine);
  }

  return {
    resolve,

    /** Whether the org's events for `engine` go anywhere (its settings or the deployment's), secrets left sealed. */
    async isConfigured(org: string, engine: EngineName): Promise<boolean> {
      return (await settings(org, engine)) !== null || fromDeployment(engine) !== null;
    },

    async view(org: string) {
      return view(await store.ofOrg(org));
    },

    /** `by`: who changes them, for the audit log (`evt.settings.changed`, secrets only as set or not). */
    async put(org: string, body: Body, by: { actor: string; actorLabel: string }) {
      const rows = await store.ofOrg(org);
      const current = new Map(rows.map((r) => [r.engine, r]));
      const changes: Parameters<EnginesStore['apply']>[1] = [];
      let generated: string | undefined;
      for (const engine of ENGINES) {
        const given = body[engine];
        if (given === undefined) continue;
        if (given === null) {
          changes.push({ engine, row: null });
          continue;
        }
        const refused = literalTargetRefusal(given.url, deps.guard);
        if (refused) {
          const message = `${engine} url may not point at ${refused}: engine events are sent from inside this deployment (WEBHOOK_ALLOW_PRIVATE_TARGETS=true allows it)`;
          throw new AppError('invalid_request', `body.${engine}.url: ${message}`, { issues: [{ path: `body.${engine}.url`, message }] });
        }
        const field = SECRET_FIELD[engine];
        let secret = (given as Record<string, unknown>)[field] as string | undefined;
        const kept = current.get(engine)?.secret_sealed ?? null;
        if (secret === undefined && !kept) {
          if (engine === 'engineA') {
            throw new AppError('invalid_request', 'body.engineA.eventKey: required the first time', {
              issues: [{ path: 'body.engineA.eventKey', message: 'required the first time' }],
            });
          }
          if (engine === 'bundled') secret = generated = `whsec_${randomBytes(32).toString('base64')}`;
        }
        changes.push({
          engine,
          row: {
            url: given.url,
            options: engine === 'engineB' ? { namespace: (given as { namespace: string }).namespace } : {},
            secretSealed: secret !== undefined ? secrets.seal(secret, secretContext(org, engine)) : kept,
          },
        });
      }
      const { deployment: _d, ...before } = view(rows);
      const after = Object.fromEntries(
        changes.map((c) => [
          c.engine,
          c.row && {
            url: c.row.url,
            ...c.row.options,
            secretSet: Boolean(c.row.secretSealed),
            secretChanged: c.row.secretSealed !== (current.get(c.engine)?.secret_sealed ?? null),
          },
        ]),
      );
      await store.apply(org, changes, [
        { subject: EVENT.settingsChanged, org, data: { kind: 'engines', actor: by.actor, actorLabel: by.actorLabel, before, after } },
      ]);
      await deps.changed?.(org);
      return view(await store.ofOrg(org), generated ? { bundled: generated } : undefined);
    },

    async test(org: string, engine: EngineName) {
      const target = await resolve(org, engine);
      if (!target)
        throw new AppError(
          'engine_not_configured',
          `${PROVIDER_LABEL[engine]} (${engine}) is not configured for this org (PUT /v1/settings/engines) or the deployment (docs/operations.md "Environment")`,
          { engine },
        );
      return { engine, source: target.source, ...(await sendEngineTest(target)) };
    },

    async configured(org: string, engine: string) {
      if (!(ENGINES as readonly string[]).includes(engine)) return { configured: false, source: null };
      const target = await resolve(org, engine as EngineName);
      return { configured: Boolean(target), source: target?.source ?? null };
    },
  };
}
export type Engines = ReturnType<typeof createEngines>;
