import { z } from 'zod';
import { BaseServiceEnv, loadConfig } from '@approvals/shared';

export const NotifierEnv = BaseServiceEnv.extend({});
export type NotifierConfig = z.infer<typeof NotifierEnv>;

export function notifierConfigFromEnv(env: Record<string, string | undefined> = process.env): NotifierConfig {
  return loadConfig(NotifierEnv, env);
}
