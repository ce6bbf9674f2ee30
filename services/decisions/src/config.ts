import { z } from 'zod';
import { BaseServiceEnv, loadConfig } from '@approvals/shared';

export const DecisionsEnv = BaseServiceEnv.extend({});
export type DecisionsConfig = z.infer<typeof DecisionsEnv>;

export function decisionsConfigFromEnv(env: Record<string, string | undefined> = process.env): DecisionsConfig {
  return loadConfig(DecisionsEnv, env);
}
