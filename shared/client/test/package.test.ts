import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

/** Every module specifier a source file imports or requires. */
function specifiers(dir: string, ext: RegExp): Array<{ file: string; spec: string }> {
  const out: Array<{ file: string; spec: string }> = [];
  for (const f of readdirSync(dir)) {
    if (!ext.test(f)) continue;
    const text = readFileSync(join(dir, f), 'utf8');
    for (const m of text.matchAll(/(?:from\s+|require\(\s*|import\(\s*)['"]([^'"]+)['"]/g)) out.push({ file: f, spec: m[1]! });
  }
  return out;
}

const packageOf = (spec: string) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);

describe('@approvals/client package', () => {
  it('declares what a consumer outside this repo needs', () => {
    expect(pkg).toMatchObject({
      name: '@approvals/client',
      version: '0.1.0',
      main: 'dist/index.js',
      types: 'dist/index.d.ts',
      bin: { approvals: 'bin/approvals.js' },
    });
    expect(pkg.files).toEqual(expect.arrayContaining(['bin', 'dist']));
    expect(pkg.private).toBeUndefined();
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['@modelcontextprotocol/sdk', 'canonicalize', 'jose', 'zod']);
  });

  it('runtime code imports only node builtins, its own files and declared dependencies (never @approvals/shared)', () => {
    const builtins = new Set(builtinModules);
    const deps = new Set(Object.keys(pkg.dependencies));
    const src = specifiers(join(ROOT, 'src'), /\.ts$/);
    expect(src.length).toBeGreaterThan(10);
    for (const { file, spec } of src) {
      if (spec.startsWith('./')) continue;
      const ok = spec.startsWith('node:') ? builtins.has(spec.slice(5)) : deps.has(packageOf(spec));
      expect({ file, spec, ok }).toEqual({ file, spec, ok: true });
    }
    expect(src.some((s) => s.spec.includes('@approvals/'))).toBe(false);
  });

  it('the bin that package.json declares exists and starts with a node shebang', () => {
    const bin = (pkg as { bin: Record<string, string> }).bin.approvals;
    expect(bin).toBe('bin/approvals.js');
    expect(readFileSync(join(ROOT, bin), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    // and the CLI it loads keeps its own shebang, for running dist/cli.js directly
    expect(readFileSync(join(ROOT, 'src', 'cli.ts'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });
});
