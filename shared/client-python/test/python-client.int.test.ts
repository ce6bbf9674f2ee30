import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { canonicalize, factsHash } from '@approvals/client';
import { startStack, type Stack } from '../../../test/helpers/stack';

/**
 * The Python client (shared/client-python) in `npm test`: the package is installed into a
 * virtual environment of Debian's python3 made here, and its unittest suite runs against
 * the real stack. The shared facts-hash vectors are checked here for the TypeScript client
 * and the server, and by the Python suite for the Python client.
 */
const PACKAGE = resolve(__dirname, '..');
const VECTORS = resolve(__dirname, '../../test-vectors/facts-hash.json');
/** Debian's interpreter, not whatever python3 the PATH finds first (pyenv and the like). */
const PYTHON = '/usr/bin/python3';
const REVIEWER = 'reviewer@python.example.com';
const DEBIAN_PACKAGES = 'python3-venv python3-setuptools python3-wheel python3-cryptography';

interface Vector {
  name: string;
  input: unknown;
  canonical: string;
  factsHash: string;
}
const vectors = (JSON.parse(readFileSync(VECTORS, 'utf8')) as { vectors: Vector[] }).vectors;

function run(cmd: string, args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((done, fail) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('error', fail);
    child.on('close', (code) => done({ code, out }));
  });
}

describe('facts-hash vectors: the TypeScript client and the server', () => {
  it('factsHash and canonicalize give every vector its canonical text and hash', () => {
    expect(vectors.length).toBeGreaterThanOrEqual(20);
    for (const v of vectors) {
      expect({ name: v.name, canonical: canonicalize(v.input), hash: factsHash(v.input) }).toEqual({ name: v.name, canonical: v.canonical, hash: v.factsHash });
    }
  });
});

describe('Python client against the real stack', () => {
  let stack: Stack;
  let org: string;
  let apiKey: string;
  let dir: string;
  let python: string;

  beforeAll(async () => {
    // The environment first: a machine without python3-venv fails here, with what to install.
    if (!existsSync(PYTHON)) throw new Error(`the Python client tests need ${PYTHON} (Debian: apt-get install python3 ${DEBIAN_PACKAGES}; .ci/run does)`);
    dir = mkdtempSync(join(tmpdir(), 'client-python-'));
    const venv = await run(PYTHON, ['-m', 'venv', '--system-site-packages', join(dir, 'venv')]);
    if (venv.code !== 0) {
      throw new Error(`${PYTHON} cannot make a virtual environment (install Debian's ${DEBIAN_PACKAGES}; .ci/run does):\n${venv.out}`);
    }
    python = join(dir, 'venv', 'bin', 'python');
    // A copy, so the build's build/ and *.egg-info stay out of the source tree.
    const src = join(dir, 'client-python');
    cpSync(PACKAGE, src, { recursive: true, filter: (p) => !/(^|\/)(build|__pycache__|[^/]*\.egg-info|test)$/.test(p.slice(PACKAGE.length)) });
    const pip = await run(python, ['-m', 'pip', 'install', '--no-index', '--no-build-isolation', '--disable-pip-version-check', '--quiet', src]);
    if (pip.code !== 0) throw new Error(`pip install of shared/client-python failed (it needs Debian's python3-setuptools and python3-wheel):\n${pip.out}`);

    stack = await startStack({ services: ['gateway', 'policies', 'decisions'], label: 'client-python' });
    ({ org, apiKey } = await stack.newOrg());
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the server binds a decision opened with facts (over MCP) to the vectors’ hashes', async () => {
    const mcp = new McpClient({ name: 'vectors', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${apiKey}` } } }));
    try {
      const objects = vectors.filter((v) => v.input !== null && typeof v.input === 'object' && !Array.isArray(v.input));
      expect(objects.length).toBeGreaterThanOrEqual(15);
      for (const [i, v] of objects.entries()) {
        const opened = await mcp.callTool({
          name: 'request_decision',
          arguments: {
            title: 'Vector',
            question: v.name,
            timeout_minutes: 60,
            approvers: [REVIEWER],
            facts: v.input,
            external_run_id: `vectors-${i}`,
            step_ref: 'v',
          },
        });
        const refusal = opened.isError ? JSON.stringify(opened.content) : null;
        expect({ name: v.name, refusal }).toEqual({ name: v.name, refusal: null });
        const id = (opened.structuredContent as { decision_id: string }).decision_id;
        const stored = (await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey })).body;
        expect({ name: v.name, hash: stored.factsHash }).toEqual({ name: v.name, hash: v.factsHash });
      }
    } finally {
      await mcp.close();
    }
  });

  it('the Python suite passes: ask, a human vote, wait, verify and consume once, the receipt, the vectors, retries', async () => {
    const env = {
      APPROVALS_TEST_URL: stack.baseUrl,
      APPROVALS_TEST_API_KEY: apiKey,
      APPROVALS_TEST_REVIEWER: REVIEWER,
      APPROVALS_TEST_REVIEWER_TOKEN: stack.session({ org, email: REVIEWER }),
    };
    // pytest where the machine has it (it runs unittest suites as they are), else unittest.
    const hasPytest = (await run(python, ['-c', 'import pytest'])).code === 0;
    const args = hasPytest ? ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'test'] : ['-m', 'unittest', 'discover', '-v', '-s', 'test'];
    const res = await run(python, args, { cwd: PACKAGE, env });
    if (res.code !== 0) throw new Error(`the Python client's tests failed:\n${res.out}`);
    // Every test ran; none was skipped.
    expect(res.out).not.toMatch(/skipped|SKIP/);
    expect(res.out).toMatch(hasPytest ? /\d+ passed/ : /\nOK\s*$/);
    // The package came from the venv, not from the source tree.
    const where = await run(python, ['-c', 'import approvals, sys; print(approvals.__file__)'], { cwd: dir });
    expect(where.out).toContain(join(dir, 'venv'));
  }, 180_000);
});
