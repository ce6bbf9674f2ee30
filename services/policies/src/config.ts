import { z } from 'zod';
import { BaseServiceEnv, ContractEngineEnv, loadConfig } from '@approvals/shared';

export const PoliciesEnv = BaseServiceEnv.extend(ContractEngineEnv.shape);
export type PoliciesConfig = z.infer<typeof PoliciesEnv>;

export function policiesConfigFromEnv(env: Record<string, string | undefined> = process.env): PoliciesConfig {
  return loadConfig(PoliciesEnv, env);
}
