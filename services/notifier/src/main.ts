import { runMain } from '@approvals/shared';
import { startNotifier } from './app';
import { notifierConfigFromEnv } from './config';

runMain('notifier', async () => startNotifier(notifierConfigFromEnv()));
