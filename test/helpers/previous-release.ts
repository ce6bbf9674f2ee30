import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { transformFileSync } from '@swc/core';

/**
 * The previous release: the commit the rolling-upgrade test runs beside this tree. Move it
 * to the released commit at each release (docs/operations.md "Upgrades").
 */
export const PREVIOUS_RELEASE = '44beec5575dcb816f45b80819fe90e40781a0fe6';

const ROOT = join(__dirname, '..', '..');

/**
 * The previous release's `shared`, its client and one service, taken from git (`git
 * archive`, no checkout) and compiled with swc (types are not checked: they were when it
 * was released) into node_modules/.cache, once per commit. Its own `@approvals/shared` and
 * `@approvals/client` are linked beside it; every other package resolves to this tree's
 * node_modules (the lock file is the same for both, or the test says so). Answers the
 * folder.
 */
export function buildPreviousRelease(service: string, commit = PREVIOUS_RELEASE): string {
  const dir = join(ROOT, 'node_modules', '.cache', 'approvals-previous', `${commit.slice(0, 12)}-${service}`);
  if (existsSync(join(dir, '.built'))) return dir;
  const tmp = `${dir}.${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const parts = [
    'shared/src',
    'shared/package.json',
    'shared/client/src',
    'shared/client/package.json',
    `services/${service}/src`,
    `services/${service}/package.json`,
  ];
  const tar = execFileSync('git', ['-C', ROOT, 'archive', '--format=tar', commit, ...parts], { maxBuffer: 256 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', tmp], { input: tar });
  for (const pkg of ['shared', 'shared/client', `services/${service}`]) compile(join(tmp, pkg, 'src'), join(tmp, pkg, 'dist'));
  mkdirSync(join(tmp, 'node_modules', '@approvals'), { recursive: true });
  symlinkSync(join('..', '..', 'shared'), join(tmp, 'node_modules', '@approvals', 'shared'));
  symlinkSync(join('..', '..', 'shared', 'client'), join(tmp, 'node_modules', '@approvals', 'client'));
  writeFileSync(join(tmp, '.built'), `${commit}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

function compile(src: string, out: string): void {
  for (const name of readdirSync(src)) {
    const from = join(src, name);
    if (statSync(from).isDirectory()) {
      compile(from, join(out, name));
      continue;
    }
    if (!name.endsWith('.ts') || name.endsWith('.d.ts')) continue;
    const { code } = transformFileSync(from, {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
      module: { type: 'commonjs' },
      sourceMaps: false,
    });
    const to = join(out, relative(src, from).replace(/\.ts$/, '.js'));
    mkdirSync(dirname(to), { recursive: true });
    writeFileSync(to, code);
  }
}

export interface PreviousReplica {
  process: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** Runs the previous release's service (`services/<name>/dist/main.js`) as a process with `env`. */
export function startPreviousReplica(dir: string, service: string, env: Record<string, string>): PreviousReplica {
  const child = spawn(process.execPath, [join(dir, 'services', service, 'dist', 'main.js')], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  for (const s of [child.stdout!, child.stderr!]) createInterface({ input: s }).on('line', (l) => lines.push(l));
  return {
    process: child,
    output: () => lines.join('\n'),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
        child.once('exit', () => {
          clearTimeout(t);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
