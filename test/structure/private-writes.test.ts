import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * No writes into a dependency's private parts: no assignment to an underscore-prefixed
 * member of an object that is not our own (`this`), and no change to the prototype of an
 * imported class (`X.prototype.m = …`, `X.prototype = …`, a prototype taken into a
 * variable to be written through, `Object.setPrototypeOf`). Such a write depends on a
 * library's internals staying as they are, and changes the library for every user in the
 * process; what a library does not offer is done through its public API or not at all.
 */
const ROOT = join(__dirname, '..', '..');
const TREES = ['shared/src', 'shared/client/src', 'deploy/src', ...readdirSync(join(ROOT, 'services')).map((s) => `services/${s}/src`)];

function sourcesUnder(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const name of entries) {
    if (name === 'node_modules' || name === 'dist') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourcesUnder(path));
    else if (/\.(ts|tsx|js|mjs|cjs)$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The text with comments blanked (lines kept, so line numbers stay right); strings are left as they are. */
function withoutComments(text: string): string {
  let out = '';
  let i = 0;
  let quote: string | undefined;
  while (i < text.length) {
    const c = text[i]!;
    if (quote) {
      out += c;
      if (c === '\\') {
        out += text[i + 1] ?? '';
        i += 2;
        continue;
      }
      if (c === quote || (c === '\n' && quote !== '`')) quote = undefined;
      i++;
      continue;
    }
    if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
      continue;
    }
    if (c === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i);
      const stop = end < 0 ? text.length : end;
      out += ' '.repeat(stop - i);
      i = stop;
      continue;
    }
    if (c === "'" || c === '"' || c === '`') quote = c;
    out += c;
    i++;
  }
  return out;
}

/** Names a module brings in from elsewhere (imports and requires). */
function importedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/import\s+(?:type\s+)?([^'";]+?)\s+from\s+['"][^'"]+['"]/g)) {
    const clause = m[1]!;
    for (const part of clause.replace(/[{}]/g, ',').split(',')) {
      const name = /(?:\*\s+as\s+)?(?:[\w$]+\s+as\s+)?([\w$]+)\s*$/.exec(part.trim().replace(/^type\s+/, ''))?.[1];
      if (name) names.add(name);
    }
  }
  for (const m of text.matchAll(/(?:const|let|var)\s+(\{[^}]*\}|[\w$]+)\s*=\s*require\(/g)) {
    for (const part of m[1]!.replace(/[{}]/g, '').split(',')) {
      const name = /(?::\s*)?([\w$]+)\s*$/.exec(part.trim())?.[1];
      if (name) names.add(name);
    }
  }
  return names;
}

const ASSIGN = String.raw`\s*(?:=(?![=>])|\+=|-=|\|\|=|&&=|\?\?=)`;

/** The places in one file's text that write into something private of another's, as `line: text`. */
export function privateWrites(source: string): string[] {
  const text = withoutComments(source);
  const imported = importedNames(text);
  const found: string[] = [];
  const lines = text.split('\n');
  const underscore = new RegExp(String.raw`([\w$\])]+)\s*(?:\.\s*(_[\w$]*)|\[\s*['"](_[\w$]*)['"]\s*\])` + ASSIGN);
  const protoWrite = new RegExp(String.raw`\b([\w$]+)(?:\.[\w$]+)*\.prototype\b(?:\s*\.\s*[\w$]+|\s*\[[^\]]+\])?` + ASSIGN);
  const protoAlias = /(?:=|:)\s*(?:\(\s*)?([\w$]+)(?:\.[\w$]+)*\.prototype\b(?!\s*\.\s*[\w$]+\s*\()/;
  // The source's own lines (comments kept) name a place; split once, not per line.
  const sourceLines = source.split('\n');
  lines.forEach((line, n) => {
    const where = `${n + 1}: ${sourceLines[n]!.trim()}`;
    const u = underscore.exec(line);
    if (u && u[1] !== 'this') return void found.push(where);
    const p = protoWrite.exec(line);
    if (p && imported.has(p[1]!)) return void found.push(where);
    const a = protoAlias.exec(line);
    if (a && imported.has(a[1]!)) return void found.push(where);
    if (/\bObject\s*\.\s*setPrototypeOf\s*\(/.test(line) || /\bReflect\s*\.\s*setPrototypeOf\s*\(/.test(line)) return void found.push(where);
  });
  return found;
}

describe('no writes into a dependency’s private parts', () => {
  it('finds what it looks for (the check itself)', () => {
    const sample = [
      "import { NodeTransport } from '@nats-io/transport-node/lib/node_transport';",
      "import pg from 'pg';",
      'conn._send = (b) => send(b);',
      "client['_ending'] = true;",
      'NodeTransport.prototype.send = function () {};',
      'pg.Client.prototype = {};',
      'const proto = NodeTransport.prototype as unknown as { _send?: () => void };',
      'Object.setPrototypeOf(req, app.request);',
      '// conn._send = commented out',
      'this._own = 1;',
      'const x = a._b === c;',
      'class Mine {}; Mine.prototype.extra = 1;',
    ].join('\n');
    expect(privateWrites(sample).map((w) => Number(w.split(':')[0]))).toEqual([3, 4, 5, 6, 7, 8]);
  });

  it('finds none in services/*/src, shared/src, shared/client/src, deploy/src', () => {
    const files = TREES.flatMap((t) => sourcesUnder(join(ROOT, t)));
    expect(files.length).toBeGreaterThan(50);
    const places = files.flatMap((f) => privateWrites(readFileSync(f, 'utf8')).map((w) => `${relative(ROOT, f)}:${w}`));
    expect(places).toEqual([]);
  });
});
