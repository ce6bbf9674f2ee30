import { runMain } from '@approvals/shared';
import { startDecisions } from './app';
import { decisionsConfigFromEnv } from './config';

runMain('decisions', async () => startDecisions(decisionsConfigFromEnv()));
