import { z } from 'zod';
import { BaseServiceEnv, loadConfig } from '@approvals/shared';

export const SchedulerEnv = BaseServiceEnv.extend({
  /** Longest sleep of the firing loop; nearer timers wake it sooner. */
  SCHEDULER_POLL_MS: z.coerce.number({ error: 'SCHEDULER_POLL_MS must be a number' }).int().min(10).max(60_000).default(1000),
});
export type SchedulerConfig = z.infer<typeof SchedulerEnv>;

export function schedulerConfigFromEnv(env: Record<string, string | undefined> = process.env): SchedulerConfig {
  return loadConfig(SchedulerEnv, env);
}
