import { runMain } from '@approvals/shared';
import { startPolicies } from './app';
import { policiesConfigFromEnv } from './config';

runMain('policies', async () => startPolicies(policiesConfigFromEnv()));
