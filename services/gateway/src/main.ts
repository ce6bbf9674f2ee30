import { runMain } from '@approvals/shared';
import { startGateway } from './app';
import { gatewayConfigFromEnv } from './config';

runMain('gateway', async () => startGateway(gatewayConfigFromEnv()));
