import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * The code passes eslint (eslint.config.mjs: eslint's and typescript-eslint's recommended
 * rules, React's hook rules) and is formatted as prettier formats it (.prettierrc.json).
 * `npm run format` fixes what it can; `npm run lint` is this test's check from a shell.
 */
const ROOT = join(__dirname, '..', '..');
const run = (bin: string, args: string[]) =>
  spawnSync(process.execPath, [join(ROOT, 'node_modules', bin), ...args], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });

describe('lint and format', () => {
  it('eslint finds no problem', () => {
    const r = run('eslint/bin/eslint.js', ['--max-warnings', '0', '.']);
    expect({ status: r.status, output: (r.stdout + r.stderr).trim() }).toEqual({ status: 0, output: '' });
  }, 600_000);

  it('prettier would change no file', () => {
    const r = run('prettier/bin/prettier.cjs', ['--list-different', '.']);
    expect({ status: r.status, differ: r.stdout.trim().split('\n').filter(Boolean) }).toEqual({ status: 0, differ: [] });
  }, 600_000);
});
