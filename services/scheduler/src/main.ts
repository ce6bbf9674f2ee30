import { runMain } from '@approvals/shared';
import { startScheduler } from './app';
import { schedulerConfigFromEnv } from './config';

runMain('scheduler', async () => startScheduler(schedulerConfigFromEnv()));
