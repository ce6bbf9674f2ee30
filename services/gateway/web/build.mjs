// Builds the web app: type-check (tsc, the app's own tsconfig) then bundle (vite).
// Called by `npm start` / `npm test` (deploy/local/bootstrap.js) when a source changed.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { build } from 'vite';

const here = import.meta.dirname;
const require = createRequire(import.meta.url);
const tsc = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
const check = spawnSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.json')], { stdio: 'inherit' });
if (check.status !== 0) process.exit(check.status ?? 1);
await build({ configFile: join(here, 'vite.config.mjs') });
