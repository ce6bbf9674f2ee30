import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ERROR_STATUS } from '@approvals/shared';
import { routeTableDocument } from '../src/http/openapi';

const ROOT = join(__dirname, '..', '..', '..');
const doc = routeTableDocument();
type Op = { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> };
const operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops as Record<string, Op>).map(([method, op]) => ({ path, method, op })));
const errorCodesOf = (op: Op, status: string): string[] => {
  const schema = op.responses[status]?.content?.['application/json']?.schema as { allOf?: Array<{ properties?: { error?: { enum?: string[] } } }> } | undefined;
  return schema?.allOf?.[1]?.properties?.error?.enum ?? [];
};

describe('OpenAPI document', () => {
  it('has no untyped nullable field (every view field has its schema)', () => {
    expect(JSON.stringify(doc)).not.toContain('{"anyOf":[{},{"type":"null"}]}');
    const decision = (doc.paths['/v1/worker/decisions/{id}'] as Record<string, Op>).get!.responses['200']!.content!['application/json']!.schema as {
      properties: Record<string, unknown>;
    };
    for (const field of ['context', 'proposedOutput', 'refinedOutput', 'output', 'responseSpec', 'responseValue', 'esign']) {
      expect({ field, typed: JSON.stringify(decision.properties[field]) !== '{"anyOf":[{},{"type":"null"}]}' }).toEqual({ field, typed: true });
    }
  });

  it("names each route's error statuses with their codes and the spec's error body", () => {
    for (const { path, method, op } of operations) {
      // Health answers 503 with the health body naming what is down (spec), not an error body.
      if (path === '/health') continue;
      for (const [status, res] of Object.entries(op.responses)) {
        if (status === 'default' || Number(status) < 400 || !res.content?.['application/json']) continue;
        const codes = errorCodesOf(op, status);
        // An HTML route (email links, OAuth callbacks) answers pages, not error bodies.
        expect({ path, method, status, codes: codes.length > 0 }).toEqual({ path, method, status, codes: true });
        for (const code of codes)
          expect({ path, method, code, status: ERROR_STATUS[code as keyof typeof ERROR_STATUS] }).toEqual({ path, method, code, status: Number(status) });
      }
    }
    const at = (path: string, method: string) => (doc.paths[path] as Record<string, Op>)[method]!;
    expect(errorCodesOf(at('/v1/worker/decisions', 'post'), '402')).toEqual(['quota_exceeded']);
    expect(errorCodesOf(at('/v1/worker/decisions', 'post'), '409')).toEqual(['policy_version_mismatch']);
    expect(errorCodesOf(at('/v1/worker/decisions', 'post'), '422')).toEqual(
      expect.arrayContaining(['unknown_policy', 'context_contract_violation', 'unsatisfiable_policy']),
    );
    expect(errorCodesOf(at('/v1/decisions/{id}/decide', 'post'), '409')).toEqual(['already_voted', 'not_pending', 'signature_required']);
    expect(errorCodesOf(at('/v1/worker/decisions/{id}/consume', 'post'), '409')).toEqual(['consume_refused']);
    expect(errorCodesOf(at('/v1/members/{id}', 'delete'), '409')).toEqual(['last_admin']);
    for (const status of ['400', '401', '403', '429', '503']) expect(errorCodesOf(at('/v1/decisions/', 'get'), status).length).toBeGreaterThan(0);
    // Verify always answers 200: a decision it cannot find is `valid: false, reason: not_found`.
    expect(at('/v1/worker/decisions/{id}/verify', 'get').responses['404']).toBeUndefined();
  });

  it("names the policy body's schema (components.schemas.PolicyBody): the save's and the preview's request body, for the console's JSON editor", () => {
    const { description, ...named } = (doc.components.schemas as Record<string, Record<string, unknown>>).PolicyBody!;
    expect(description).toMatch(/policy definition/);
    expect(named).toMatchObject({ type: 'object', required: ['name'], additionalProperties: false });
    for (const [path, method] of [
      ['/v1/policies/', 'post'],
      ['/v1/policies/preview', 'post'],
      ['/v1/worker/policies', 'post'],
      ['/v1/worker/policies/preview', 'post'],
    ] as const) {
      const op = (doc.paths[path] as Record<string, { requestBody: { content: Record<string, { schema: unknown }> } }>)[method]!;
      expect({ path, schema: op.requestBody.content['application/json']!.schema }).toEqual({ path, schema: named });
    }
  });

  it('passes `redocly lint` with no error (offline)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(doc));
      const bin = join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
      const run = spawnSync(process.execPath, [bin, 'lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'summary'], {
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      });
      expect({ status: run.status, out: run.status === 0 ? '' : run.stdout + run.stderr }).toEqual({ status: 0, out: '' });
      expect(run.stdout + run.stderr).not.toMatch(/\d+ errors?\b/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the client's generated wire types (shared/client/src/openapi.ts) are what the contracts give: `npm run types`", () => {
    const run = spawnSync(process.execPath, [join(ROOT, 'deploy', 'local', 'types.js'), '--check'], { encoding: 'utf8' });
    expect({ status: run.status, out: run.stdout + run.stderr }).toEqual({ status: 0, out: expect.stringContaining('matches the contracts') });
  });
});
