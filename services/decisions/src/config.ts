import { z } from 'zod';
import { BaseServiceEnv, ContractEngineEnv, SecretsEnv, loadConfig } from '@approvals/shared';
import { parseReceiptSigningKey, parseRetiredKeys } from './receipts/receipt-signer';

/** A value whose parse throws a message people can act on: refused at start with it. */
const checkedBy = (parse: (v: string) => unknown) =>
  z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .optional()
      .superRefine((v, ctx) => {
        if (v === undefined) return;
        try {
          parse(v);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message });
        }
      }),
  );

export const DecisionsEnv = BaseServiceEnv.extend(ContractEngineEnv.shape)
  .extend(SecretsEnv.shape)
  .extend({
    /** Default monthly decision quota per org; unset means unlimited. Per-org overrides live in decisions.org_quotas. */
    /** The Ed25519 key that signs receipts (PKCS#8 PEM); unset: receipts are refused (docs/receipts.md). */
    RECEIPT_SIGNING_KEY: checkedBy(parseReceiptSigningKey),
    /** Retired receipt keys' public JWKs (a JSON array or JWKS), kept in the JWKS so old receipts verify. */
    RECEIPT_RETIRED_KEYS: checkedBy(parseRetiredKeys),
    DECISION_QUOTA_PER_MONTH: z.coerce.number({ error: 'DECISION_QUOTA_PER_MONTH must be a number' }).int().positive().optional(),
  });
export type DecisionsConfig = z.infer<typeof DecisionsEnv>;

export function decisionsConfigFromEnv(env: Record<string, string | undefined> = process.env): DecisionsConfig {
  return loadConfig(DecisionsEnv, env);
}
