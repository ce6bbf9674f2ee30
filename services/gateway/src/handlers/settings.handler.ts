import { z } from 'zod';
import {
  AppError,
  SecretBox,
  actorLabelOf,
  actorOf,
  literalTargetRefusal,
  llmKeyContext,
  type AddressPolicy,
  type Logger,
  type Principal,
} from '@approvals/shared';
import type { SettingsStore } from '../store/settings.store';
import type { LocalRequest, LocalResult } from '../http/route';

export const LlmSettingsBody = z.strictObject({
  /** An OpenAI-compatible API base, e.g. https://api.example.com/v1 (POST {baseUrl}/chat/completions). */
  baseUrl: z
    .string()
    .max(2000)
    .pipe(z.url({ protocol: /^https?$/, error: 'baseUrl must be an http(s) URL' })),
  model: z.string().min(1).max(200),
  /** Write-only: never read back. Omit to keep the stored key. */
  apiKey: z.string().min(1).max(4000).optional(),
});
export const LlmSettingsView = z.object({
  configured: z.boolean(),
  baseUrl: z.string().nullable(),
  model: z.string().nullable(),
  apiKeySet: z.boolean(),
  updatedAt: z.string().nullable(),
});

/** PATCH: only the fields present change; `decisionDataDays: null` keeps decision data forever (the default). */
export const RetentionSettingsBody = z.strictObject({
  /** Days after resolution before a decision's content (context, drafts, evidence) is purged. */
  decisionDataDays: z.number().int().min(1).max(3650).nullable().optional(),
});
export const RetentionSettingsView = z.object({ decisionDataDays: z.number().nullable(), updatedAt: z.string().nullable() });

interface RetentionValue {
  decisionDataDays: number | null;
}

interface LlmValue {
  baseUrl: string;
  model: string;
  /** Sealed (SecretBox); rows written before sealing held it plain until the start-up upgrade. */
  apiKey?: string;
}

/** The audit entry of a settings change (secrets never in it: only whether one is set). */
const changed = (req: { org: string; principal: Principal }, kind: string, before: unknown, after: unknown) => ({
  org: req.org,
  action: 'settings.changed',
  actor: actorOf(req.principal),
  actorLabel: actorLabelOf(req.principal),
  target: kind,
  details: { kind, before: before ?? null, after },
});

/** Org settings in access.settings, one row per (org, kind). */
export function createSettings(store: SettingsStore, opts: { guard: AddressPolicy; secrets: SecretBox }) {
  const read = <V>(org: string, kind: string) => store.read<V>(org, kind);
  const llmView = (row?: { value: LlmValue; updated_at: Date }) => ({
    configured: Boolean(row),
    baseUrl: row?.value.baseUrl ?? null,
    model: row?.value.model ?? null,
    apiKeySet: Boolean(row?.value.apiKey),
    updatedAt: row ? row.updated_at.toISOString() : null,
  });
  const retentionView = (row?: { value: RetentionValue; updated_at: Date }) => ({
    decisionDataDays: row?.value.decisionDataDays ?? null,
    updatedAt: row ? row.updated_at.toISOString() : null,
  });
  return {
    /** Every org with a retention period set (for the decisions service's purge). */
    async retentionOrgs(): Promise<Array<{ org: string; decisionDataDays: number }>> {
      const rows = await store.withField<RetentionValue>('retention', 'decisionDataDays');
      return rows
        .filter((r) => typeof r.value.decisionDataDays === 'number')
        .map((r) => ({ org: r.org_id, decisionDataDays: r.value.decisionDataDays as number }));
    },
    async llm(org: string): Promise<LlmValue | undefined> {
      return (await read<LlmValue>(org, 'llm'))?.value;
    },
    /**
     * Seals model keys stored before keys were sealed, and re-seals those under a previous
     * SECRETS_KEY with the current one. Runs at start; idempotent.
     */
    async sealStoredKeys(log: Logger): Promise<number> {
      const rows = await store.withField<LlmValue>('llm', 'apiKey');
      let changed = 0;
      for (const row of rows) {
        const key = row.value.apiKey!;
        let plain: string;
        if (!SecretBox.isSealed(key)) plain = key;
        else if (opts.secrets.isCurrent(key)) continue;
        else plain = opts.secrets.open(key, llmKeyContext(row.org_id));
        const sealed = opts.secrets.seal(plain, llmKeyContext(row.org_id));
        await store.rewrite(row.org_id, 'llm', { ...row.value, apiKey: sealed });
        changed++;
      }
      if (changed) log.info({ changed }, 'model API keys sealed with the current SECRETS_KEY');
      return changed;
    },
    handlers: {
      async getRetention(req: LocalRequest): Promise<LocalResult> {
        return { body: retentionView(await read<RetentionValue>(req.org, 'retention')) };
      },
      async patchRetention(req: LocalRequest<z.infer<typeof RetentionSettingsBody>>): Promise<LocalResult> {
        const current = await read<RetentionValue>(req.org, 'retention');
        if (req.body.decisionDataDays === undefined) return { body: retentionView(current) };
        const value: RetentionValue = { ...current?.value, decisionDataDays: req.body.decisionDataDays };
        return { body: retentionView(await store.write(req.org, 'retention', value, changed(req, 'retention', current?.value, value))) };
      },
      async getLlm(req: LocalRequest): Promise<LocalResult> {
        return { body: llmView(await read<LlmValue>(req.org, 'llm')) };
      },
      async putLlm(req: LocalRequest<z.infer<typeof LlmSettingsBody>>): Promise<LocalResult> {
        const refused = literalTargetRefusal(req.body.baseUrl, opts.guard);
        if (refused) {
          const message = `baseUrl may not point at ${refused}: the model is called from inside this deployment (WEBHOOK_ALLOW_PRIVATE_TARGETS=true allows it)`;
          throw new AppError('invalid_request', `body.baseUrl: ${message}`, { issues: [{ path: 'body.baseUrl', message }] });
        }
        const prev = (await read<LlmValue>(req.org, 'llm'))?.value;
        // The key is sealed here and never opened by the gateway: only the decisions service does.
        const apiKey = req.body.apiKey !== undefined ? opts.secrets.seal(req.body.apiKey, llmKeyContext(req.org)) : prev?.apiKey;
        const value: LlmValue = { baseUrl: req.body.baseUrl, model: req.body.model, apiKey };
        const shown = (v?: LlmValue) =>
          v ? { baseUrl: v.baseUrl, model: v.model, apiKeySet: Boolean(v.apiKey), apiKeyChanged: v === value && req.body.apiKey !== undefined } : null;
        return { body: llmView(await store.write(req.org, 'llm', value, changed(req, 'llm', shown(prev), shown(value)))) };
      },
    },
  };
}
