import { z } from 'zod';
import { BaseServiceEnv, loadConfig } from '@approvals/shared';

export const SchedulerEnv = BaseServiceEnv.extend({});
export type SchedulerConfig = z.infer<typeof SchedulerEnv>;

export function schedulerConfigFromEnv(env: Record<string, string | undefined> = process.env): SchedulerConfig {
  return loadConfig(SchedulerEnv, env);
}
