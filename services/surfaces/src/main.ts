import { runMain } from '@approvals/shared';
import { startSurfaces } from './app';
import { surfacesConfigFromEnv } from './config';

runMain('surfaces', async () => startSurfaces(surfacesConfigFromEnv()));
