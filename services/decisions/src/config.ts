import { z } from 'zod';
import { BaseServiceEnv, ContractEngineEnv, SecretsEnv, loadConfig } from '@approvals/shared';

export const DecisionsEnv = BaseServiceEnv.extend(ContractEngineEnv.shape).extend(SecretsEnv.shape).extend({
  /** Default monthly decision quota per org; unset means unlimited. Per-org overrides live in decisions.org_quotas. */
  DECISION_QUOTA_PER_MONTH: z.coerce.number({ error: 'DECISION_QUOTA_PER_MONTH must be a number' }).int().positive().optional(),
});
export type DecisionsConfig = z.infer<typeof DecisionsEnv>;

export function decisionsConfigFromEnv(env: Record<string, string | undefined> = process.env): DecisionsConfig {
  return loadConfig(DecisionsEnv, env);
}
