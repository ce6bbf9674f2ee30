import { z } from 'zod';
import { BaseServiceEnv, loadConfig } from '@approvals/shared';

export const SurfacesEnv = BaseServiceEnv.extend({});
export type SurfacesConfig = z.infer<typeof SurfacesEnv>;

export function surfacesConfigFromEnv(env: Record<string, string | undefined> = process.env): SurfacesConfig {
  return loadConfig(SurfacesEnv, env);
}
