import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startStack, type HttpResult, type Stack } from '../../../test/helpers/stack';

/**
 * POST /v1/worker/decisions over HTTP: the request schema with every limit at its
 * boundary, and the policy gate (unknown policy, context contract, owned fields,
 * approvers, signature, version pin, required:false and the legacy floor) plus the
 * ad-hoc form. Real gateway, policies and decisions services on Postgres and NATS.
 */

function expectInvalid(res: HttpResult, path: string, message?: RegExp) {
  expect(res.status).toBe(400);
  expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String), issues: expect.any(Array) });
  for (const issue of res.body.issues) expect(issue).toEqual({ path: expect.any(String), message: expect.any(String) });
  const hit = res.body.issues.find((i: { path: string }) => i.path === path);
  expect({ issues: res.body.issues, found: Boolean(hit) }).toEqual({ issues: res.body.issues, found: true });
  if (message) expect(hit.message).toMatch(message);
}

function expectError(res: HttpResult, status: number, body: Record<string, unknown>) {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: { message: expect.any(String), ...body } });
  expect(res.body.message.length).toBeGreaterThan(0);
}

const ID = /^[A-Za-z0-9_-]+$/;
let runSeq = 0;
const run = (label = 'run') => `${label}-${Date.now().toString(36)}-${++runSeq}`;
const s = (n: number, ch = 'x') => ch.repeat(n);

describe('opening a decision: request schema and policy gate', () => {
  let stack: Stack;
  let admin: string;
  let apiKey: string;
  let orgId: string;

  beforeAll(async () => {
    stack = await startStack({ label: 'decopen', services: ['gateway', 'policies', 'decisions'] });
    ({ admin, apiKey, org: orgId } = await stack.newOrg());
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const create = (body: Record<string, unknown>, token = apiKey) => stack.http('POST', '/v1/worker/decisions', { token, body });
  const workerGet = (id: string) => stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey });
  const sessionGet = (id: string) => stack.http('GET', `/v1/decisions/${id}`, { token: admin });
  const upsertPolicy = (body: Record<string, unknown>) => stack.http('POST', '/v1/worker/policies', { token: apiKey, body });
  /** An ad-hoc body that is valid on its own. */
  const adHoc = (extra: Record<string, unknown> = {}) => ({ externalRunId: run(), stepRef: 'step-1', approvers: ['alice@example.com'], ...extra });

  async function expectCreated(body: Record<string, unknown>) {
    const res = await create(body);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 201,
      body: {
        approvalNeeded: true,
        decisionId: expect.stringMatching(ID),
        reason: 'created',
        status: 'PENDING',
        expiresAt: null,
        policyVersion: null,
        policyVersionId: null,
      },
    });
    return res.body.decisionId as string;
  }

  /** Proof that nothing was stored for (run, step): the same key now creates a fresh decision. */
  async function expectNothingStored(externalRunId: string, stepRef: string) {
    const res = await create({ externalRunId, stepRef, approvers: ['alice@example.com'] });
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 201, reason: 'created' });
  }

  describe('request schema', () => {
    it('accepts every block kind and reads the context back as sent, engine defaulting to engineA', async () => {
      const context = {
        title: 'Refund for order 42',
        prompt: 'Approve the refund?',
        aiReasoning: 'The customer was double charged.',
        blocks: [
          { kind: 'text', text: 'plain text', title: 'Summary' },
          {
            kind: 'fields',
            fields: [
              { label: 'Amount', value: '120 EUR' },
              { label: 'Customer', value: 'ACME' },
            ],
          },
          { kind: 'tool_call', tool: 'refund', args: { orderId: 42, nested: { a: [1, 2] } } },
          { kind: 'diff', before: 'old', after: 'new', title: 'Change' },
          { kind: 'ai_output', model: 'gpt-x', prompt: 'why?', output: 'because', costUsd: 0.012, tokens: 345 },
          { kind: 'ai_output', output: 'only the required field' },
        ],
        payload: { any: { thing: true } },
        sourceUrl: 'https://crm.example.com/orders/42',
        extra: { free: ['form'] },
        data: { amount: 120, currency: { value: 'EUR', src: 'crm' } },
      };
      const proposedOutput = { title: 'Reply', format: 'markdown', content: '# Hello' };
      const body = adHoc({ workflowRef: 'wf-refunds', context, proposedOutput, responseSpec: { type: 'text', multiline: true } });
      const id = await expectCreated(body);
      const got = await workerGet(id);
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({
        id,
        status: 'PENDING',
        engine: 'engineA',
        externalRunId: body.externalRunId,
        stepRef: 'step-1',
        workflowRef: 'wf-refunds',
        context,
        proposedOutput,
        responseSpec: { type: 'text', multiline: true },
        output: proposedOutput,
        approvers: ['alice@example.com'],
        assigneeEmail: null,
        policy: null,
        policyVersion: null,
        policyVersionId: null,
        esign: null,
        factsHash: null,
        consumed: false,
      });
    });

    it('accepts null for the nullable context fields and each responseSpec type and every engine', async () => {
      await expectCreated(adHoc({ context: { title: null, prompt: null, aiReasoning: null, payload: null, sourceUrl: null } }));
      await expectCreated(adHoc({ responseSpec: { type: 'approval' } }));
      await expectCreated(adHoc({ responseSpec: { type: 'text' } }));
      await expectCreated(
        adHoc({
          responseSpec: {
            type: 'select',
            options: [
              { id: 'a', label: 'A', description: 'first' },
              { id: 'b', label: 'B' },
            ],
            min: 0,
            max: 2,
          },
        }),
      );
      for (const engine of ['bundled', 'engineA', 'engineB', 'trigger', 'mcp', 'api']) {
        const id = await expectCreated(adHoc({ engine }));
        expect((await workerGet(id)).body.engine).toBe(engine);
      }
    });

    it('stores the factsHash, esign attachment, timeoutSec (expiresAt) and exclusive flag', async () => {
      const factsHash = 'a'.repeat(64);
      const esign = { envelopeId: 'env-1', accountId: 'acct-1', documentUrl: 'https://sign.example.com/doc/1' };
      const before = Date.now();
      const res = await create(adHoc({ factsHash, esign, timeoutSec: 3600, exclusive: true }));
      expect(res.status).toBe(201);
      const expiresAt = Date.parse(res.body.expiresAt);
      expect(expiresAt).toBeGreaterThanOrEqual(before + 3600_000 - 5000);
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3600_000 + 5000);
      const got = await workerGet(res.body.decisionId);
      expect(got.body).toMatchObject({ factsHash, esign, expiresAt: res.body.expiresAt, requiresSignature: false });
    });

    it('refuses an unknown top-level field with 400 invalid_request naming it', async () => {
      const res = await create(adHoc({ approver: 'typo@example.com' }));
      expectInvalid(res, 'body', /unknown field\(s\): approver/);
    });

    it('refuses unknown fields inside context, a block, proposedOutput, responseSpec and esign', async () => {
      expectInvalid(await create(adHoc({ context: { title: 't', subtitle: 'x' } })), 'body.context', /subtitle/);
      expectInvalid(await create(adHoc({ context: { blocks: [{ kind: 'text', text: 't', colour: 'red' }] } })), 'body.context.blocks.0', /colour/);
      expectInvalid(
        await create(adHoc({ context: { blocks: [{ kind: 'fields', fields: [{ label: 'a', value: 'b', unit: 'c' }] }] } })),
        'body.context.blocks.0.fields.0',
        /unit/,
      );
      expectInvalid(await create(adHoc({ proposedOutput: { content: 'c', author: 'me' } })), 'body.proposedOutput', /author/);
      expectInvalid(await create(adHoc({ responseSpec: { type: 'approval', label: 'ok' } })), 'body.responseSpec', /label/);
      expectInvalid(await create(adHoc({ responseSpec: { type: 'text', maxLength: 10 } })), 'body.responseSpec', /maxLength/);
      expectInvalid(
        await create(
          adHoc({
            responseSpec: {
              type: 'select',
              options: [
                { id: 'a', label: 'A', icon: 'x' },
                { id: 'b', label: 'B' },
              ],
            },
          }),
        ),
        'body.responseSpec.options.0',
        /icon/,
      );
      expectInvalid(await create(adHoc({ esign: { envelopeId: 'e', provider: 'docusign' } })), 'body.esign', /provider/);
    });

    it('refuses a block of unknown kind and blocks missing their required fields', async () => {
      expectInvalid(await create(adHoc({ context: { blocks: [{ kind: 'image', url: 'x' }] } })), 'body.context.blocks.0.kind');
      expectInvalid(await create(adHoc({ context: { blocks: [{ kind: 'text' }] } })), 'body.context.blocks.0.text');
      expectInvalid(await create(adHoc({ context: { blocks: [{ kind: 'fields' }] } })), 'body.context.blocks.0.fields');
      expectInvalid(await create(adHoc({ context: { blocks: [{ kind: 'fields', fields: [{ label: 'a' }] }] } })), 'body.context.blocks.0.fields.0.value');
      expectInvalid(await create(adHoc({ context: { blocks: [{ kind: 'tool_call', tool: 't' }] } })), 'body.context.blocks.0.args');
      expectInvalid(await create(adHoc({ context: { blocks: [{ kind: 'diff', before: 'a' }] } })), 'body.context.blocks.0.after');
      expectInvalid(await create(adHoc({ context: { blocks: [{ kind: 'ai_output', model: 'm' }] } })), 'body.context.blocks.0.output');
      expectInvalid(await create(adHoc({ proposedOutput: { title: 't' } })), 'body.proposedOutput.content');
      expectInvalid(await create(adHoc({ proposedOutput: { content: 'c', format: 'html' } })), 'body.proposedOutput.format');
      expectInvalid(await create(adHoc({ esign: { accountId: 'a' } })), 'body.esign.envelopeId');
      expectInvalid(await create(adHoc({ responseSpec: { type: 'choice' } })), 'body.responseSpec.type');
    });

    const block = (b: Record<string, unknown>) => ({ context: { blocks: [b] } });
    const options = (n: number, opt: (i: number) => Record<string, unknown> = () => ({})) => ({
      responseSpec: { type: 'select', options: Array.from({ length: n }, (_, i) => ({ id: `o${i}`, label: `Option ${i}`, ...opt(i) })) },
    });
    // [subject, body at the limit, body one over the limit, issue path of the refusal]
    const limits: Array<[string, Record<string, unknown>, Record<string, unknown>, string]> = [
      ['context.title 200', { context: { title: s(200) } }, { context: { title: s(201) } }, 'body.context.title'],
      ['context.prompt 4000', { context: { prompt: s(4000) } }, { context: { prompt: s(4001) } }, 'body.context.prompt'],
      ['context.aiReasoning 8000', { context: { aiReasoning: s(8000) } }, { context: { aiReasoning: s(8001) } }, 'body.context.aiReasoning'],
      ['text block 8000', block({ kind: 'text', text: s(8000) }), block({ kind: 'text', text: s(8001) }), 'body.context.blocks.0.text'],
      [
        'fields value 2000',
        block({ kind: 'fields', fields: [{ label: 'l', value: s(2000) }] }),
        block({ kind: 'fields', fields: [{ label: 'l', value: s(2001) }] }),
        'body.context.blocks.0.fields.0.value',
      ],
      [
        'diff before 8000',
        block({ kind: 'diff', before: s(8000), after: 'a' }),
        block({ kind: 'diff', before: s(8001), after: 'a' }),
        'body.context.blocks.0.before',
      ],
      [
        'diff after 8000',
        block({ kind: 'diff', before: 'b', after: s(8000) }),
        block({ kind: 'diff', before: 'b', after: s(8001) }),
        'body.context.blocks.0.after',
      ],
      [
        'ai_output prompt 8000',
        block({ kind: 'ai_output', prompt: s(8000), output: 'o' }),
        block({ kind: 'ai_output', prompt: s(8001), output: 'o' }),
        'body.context.blocks.0.prompt',
      ],
      ['ai_output output 8000', block({ kind: 'ai_output', output: s(8000) }), block({ kind: 'ai_output', output: s(8001) }), 'body.context.blocks.0.output'],
      [
        'proposedOutput.title 200',
        { proposedOutput: { title: s(200), content: 'c' } },
        { proposedOutput: { title: s(201), content: 'c' } },
        'body.proposedOutput.title',
      ],
      ['proposedOutput.content 50000', { proposedOutput: { content: s(50000) } }, { proposedOutput: { content: s(50001) } }, 'body.proposedOutput.content'],
      ['select options 20', options(20), options(21), 'body.responseSpec.options'],
      [
        'select option id 100',
        options(2, (i) => ({ id: i === 0 ? s(100) : 'b' })),
        options(2, (i) => ({ id: i === 0 ? s(101) : 'b' })),
        'body.responseSpec.options.0.id',
      ],
      [
        'select option label 200',
        options(2, () => ({ label: s(200) })),
        options(2, (i) => ({ label: i === 1 ? s(201) : 'A' })),
        'body.responseSpec.options.1.label',
      ],
      [
        'select option description 500',
        options(2, () => ({ description: s(500) })),
        options(2, (i) => ({ description: i === 0 ? s(501) : 'd' })),
        'body.responseSpec.options.0.description',
      ],
      ['esign envelopeId 200', { esign: { envelopeId: s(200) } }, { esign: { envelopeId: s(201) } }, 'body.esign.envelopeId'],
      ['esign accountId 200', { esign: { envelopeId: 'e', accountId: s(200) } }, { esign: { envelopeId: 'e', accountId: s(201) } }, 'body.esign.accountId'],
    ];

    it.each(limits)('%s: the limit is accepted, one more is 400', async (_subject, ok, over, path) => {
      const id = await expectCreated(adHoc(ok));
      expect((await workerGet(id)).status).toBe(200);
      expectInvalid(await create(adHoc(over)), path);
    });

    it('lengths count characters (code points), not UTF-16 units', async () => {
      const id = await expectCreated(adHoc({ context: { title: '\u{1F600}'.repeat(200) } }));
      expect((await workerGet(id)).body.context.title).toBe('\u{1F600}'.repeat(200));
      expectInvalid(await create(adHoc({ context: { title: '\u{1F600}'.repeat(201) } })), 'body.context.title');
    });

    it('a NUL character anywhere is a 400, not a 500', async () => {
      expectInvalid(await create(adHoc({ externalRunId: 'run\u0000x' })), 'body.externalRunId');
      expectInvalid(await create(adHoc({ context: { title: 'a\u0000b' } })), 'body.context.title');
      expectInvalid(await create(adHoc({ context: { data: { 'k\u0000': 1 } } })), 'body.context.data');
    });

    it('select takes 2 to 20 options: 1 is 400, 2 is accepted; option id and label need at least one character', async () => {
      expectInvalid(await create(adHoc(options(1))), 'body.responseSpec.options');
      expectInvalid(await create(adHoc(options(0))), 'body.responseSpec.options');
      await expectCreated(adHoc(options(2)));
      expectInvalid(await create(adHoc(options(2, (i) => ({ id: i === 0 ? '' : 'b' })))), 'body.responseSpec.options.0.id');
      expectInvalid(await create(adHoc(options(2, (i) => ({ label: i === 0 ? '' : 'B' })))), 'body.responseSpec.options.0.label');
    });

    it('select min and max: min >= 0, max > 0, integers', async () => {
      expectInvalid(await create(adHoc({ responseSpec: { ...options(2).responseSpec, min: -1 } })), 'body.responseSpec.min');
      expectInvalid(await create(adHoc({ responseSpec: { ...options(2).responseSpec, max: 0 } })), 'body.responseSpec.max');
      expectInvalid(await create(adHoc({ responseSpec: { ...options(2).responseSpec, max: 1.5 } })), 'body.responseSpec.max');
      await expectCreated(adHoc({ responseSpec: { ...options(3).responseSpec, min: 0, max: 3 } }));
    });

    it('esign envelopeId must not be empty; documentUrl must be a URI of at most 2000 characters', async () => {
      expectInvalid(await create(adHoc({ esign: { envelopeId: '' } })), 'body.esign.envelopeId');
      expectInvalid(await create(adHoc({ esign: { envelopeId: 'e', documentUrl: 'not a uri' } })), 'body.esign.documentUrl');
      const base = 'https://sign.example.com/';
      await expectCreated(adHoc({ esign: { envelopeId: 'e', documentUrl: base + s(2000 - base.length) } }));
      expectInvalid(await create(adHoc({ esign: { envelopeId: 'e', documentUrl: base + s(2001 - base.length) } })), 'body.esign.documentUrl');
    });

    it('factsHash is exactly 64 lowercase hex characters', async () => {
      await expectCreated(adHoc({ factsHash: '0123456789abcdef'.repeat(4) }));
      expectInvalid(await create(adHoc({ factsHash: '0123456789ABCDEF'.repeat(4) })), 'body.factsHash');
      expectInvalid(await create(adHoc({ factsHash: 'a'.repeat(63) })), 'body.factsHash');
      expectInvalid(await create(adHoc({ factsHash: 'a'.repeat(65) })), 'body.factsHash');
      expectInvalid(await create(adHoc({ factsHash: 'g'.repeat(64) })), 'body.factsHash');
    });

    it('timeoutSec is an integer > 0; externalRunId and stepRef are required and not empty; engine is one of six', async () => {
      expectInvalid(await create(adHoc({ timeoutSec: 0 })), 'body.timeoutSec');
      expectInvalid(await create(adHoc({ timeoutSec: -5 })), 'body.timeoutSec');
      expectInvalid(await create(adHoc({ timeoutSec: 1.5 })), 'body.timeoutSec');
      expectInvalid(await create(adHoc({ timeoutSec: '60' })), 'body.timeoutSec');
      // The largest timeout the store holds is accepted; one more is a 400, never a 500.
      const max = await create(adHoc({ timeoutSec: 2147483647 }));
      expect(max.status).toBe(201);
      expect(Date.parse(max.body.expiresAt) - Date.parse((await workerGet(max.body.decisionId)).body.createdAt)).toBe(2147483647 * 1000);
      expectInvalid(await create(adHoc({ timeoutSec: 2147483648 })), 'body.timeoutSec');
      expectInvalid(await create(adHoc({ timeoutSec: 1e12 })), 'body.timeoutSec');
      expectInvalid(await create(adHoc({ externalRunId: '' })), 'body.externalRunId');
      expectInvalid(await create(adHoc({ stepRef: '' })), 'body.stepRef');
      expectInvalid(await create({ stepRef: 's', approvers: ['alice@example.com'] }), 'body.externalRunId');
      expectInvalid(await create({ externalRunId: run(), approvers: ['alice@example.com'] }), 'body.stepRef');
      expectInvalid(await create(adHoc({ engine: 'foo' })), 'body.engine');
      expectInvalid(await create(adHoc({ assigneeEmail: 'not-an-email' })), 'body.assigneeEmail');
      expectInvalid(await create(adHoc({ required: 'yes' })), 'body.required');
      expectInvalid(await create(adHoc({ policy: 'Not A Key' })), 'body.policy');
    });

    it('a body that is not a JSON object is 400', async () => {
      const res = await stack.http('POST', '/v1/worker/decisions', {
        token: apiKey,
        rawBody: '{"externalRunId":',
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String), issues: [{ path: 'body', message: expect.any(String) }] });
      expectInvalid(await create([] as never), 'body');
    });
  });

  describe('policy gate', () => {
    const approver = 'pat@example.com';
    let contractKey: string;

    beforeAll(async () => {
      contractKey = `contract-${Date.now().toString(36)}`;
      const res = await upsertPolicy({
        key: contractKey,
        name: 'Amount contract',
        defaults: { approvers: [approver, 'quinn@example.com'], approvalsRequired: 1 },
        contextSchema: { type: 'object', required: ['amount'], properties: { amount: { type: 'number' } } },
      });
      expect(res.status).toBe(201);
    });

    it('unknown policy: 422 unknown_policy naming the key, with required true or false, and no decision is created', async () => {
      for (const required of [undefined, true, false]) {
        const externalRunId = run('unknown');
        const res = await create({ externalRunId, stepRef: 's', policy: 'no-such-policy', ...(required === undefined ? {} : { required }) });
        expectError(res, 422, { error: 'unknown_policy', policy: 'no-such-policy' });
        await expectNothingStored(externalRunId, 's');
      }
    });

    it('unknown policy is decided before anything else the request gets wrong', async () => {
      const res = await create({
        externalRunId: run(),
        stepRef: 's',
        policy: 'missing-too',
        approvers: ['x@example.com'],
        timeoutSec: 5,
        assigneeEmail: 'nobody@example.com',
      });
      expectError(res, 422, { error: 'unknown_policy', policy: 'missing-too' });
    });

    it('an archived policy is unknown', async () => {
      const key = `archived-${Date.now().toString(36)}`;
      expect((await upsertPolicy({ key, name: 'To archive', defaults: { approvers: [approver] } })).status).toBe(201);
      const del = await stack.http('DELETE', `/v1/policies/${key}`, { token: admin });
      expect(del.status).toBe(200);
      expectError(await create({ externalRunId: run(), stepRef: 's', policy: key }), 422, { error: 'unknown_policy', policy: key });
    });

    it('context contract: missing or mistyped data is 422 context_contract_violation with violations; nothing is created, even with required:false', async () => {
      const externalRunId = run('contract');
      const missing = await create({ externalRunId, stepRef: 's', policy: contractKey, context: { title: 'no data' } });
      expectError(missing, 422, { error: 'context_contract_violation', policy: contractKey, violations: ['amount: is required'] });

      const wrong = await create({ externalRunId, stepRef: 's', policy: contractKey, context: { data: { amount: 'five' } } });
      expectError(wrong, 422, { error: 'context_contract_violation', policy: contractKey, violations: [expect.stringMatching(/^amount: must be number/)] });
      expect(wrong.body.message).toContain(contractKey);

      const notRequired = await create({ externalRunId, stepRef: 's', policy: contractKey, required: false, context: { data: {} } });
      expectError(notRequired, 422, { error: 'context_contract_violation', policy: contractKey, violations: ['amount: is required'] });

      const enrichedWrong = await create({ externalRunId, stepRef: 's', policy: contractKey, context: { data: { amount: { value: 'five', src: 'crm' } } } });
      expectError(enrichedWrong, 422, { error: 'context_contract_violation', policy: contractKey, violations: ['amount: must be number'] });
      await expectNothingStored(externalRunId, 's');
    });

    it('a contract that would hang or recurse is refused at save (400); an expensive pattern is cut off per request (422, fast), and the service keeps serving', async () => {
      for (const contextSchema of [
        { type: 'object', properties: { code: { type: 'string', pattern: '(a+)+$' } } },
        { $ref: '#' },
        { $schema: 'https://json-schema.org/draft/2020-12/schema', $dynamicRef: '#meta', $dynamicAnchor: 'meta' },
      ]) {
        const saved = await upsertPolicy({ key: 'hazard', name: 'hazard', defaults: { approvers: [approver] }, contextSchema });
        expect({ contextSchema, status: saved.status }).toEqual({ contextSchema, status: 400 });
        expect(saved.body.issues).toEqual([{ path: 'body.contextSchema', message: expect.any(String) }]);
        expect(saved.body.message).not.toMatch(/Maximum call stack/);
      }
      // patterns a ReDoS analyser flags are refused at save too, naming them
      const redos = await upsertPolicy({
        key: 'slow-pattern',
        name: 'slow',
        defaults: { approvers: [approver] },
        contextSchema: { type: 'object', properties: { code: { type: 'string', pattern: '^(a|a)*b$' } } },
      });
      expect(redos.status).toBe(400);
      expect(redos.body.issues).toEqual([{ path: 'body.contextSchema', message: expect.stringMatching(/\^\(a\|a\)\*b\$.*catastrophic backtracking/) }]);
      // a contract fine for small data but too expensive for some data: refused within the budget
      const slow = await upsertPolicy({
        key: 'slow-contract',
        name: 'slow',
        defaults: { approvers: [approver] },
        contextSchema: { type: 'object', properties: { rows: { type: 'array', uniqueItems: true } } },
      });
      expect(slow.status).toBe(201);
      const ok = await create({ externalRunId: run(), stepRef: 's', policy: 'slow-contract', context: { data: { rows: [[1], [2]] } } });
      expect(ok.status).toBe(201);
      const cut = await create({
        externalRunId: run('slow'),
        stepRef: 's',
        policy: 'slow-contract',
        context: { data: { rows: Array.from({ length: 45_000 }, (_, i) => [i]) } },
      });
      expectError(cut, 422, { error: 'context_contract_violation', policy: 'slow-contract', violations: [expect.stringMatching(/took longer than \d+ ms/)] });
      const mismatch = await create({ externalRunId: run(), stepRef: 's', policy: 'slow-contract', context: { data: { rows: [[1], [1]] } } });
      expectError(mismatch, 422, {
        error: 'context_contract_violation',
        policy: 'slow-contract',
        violations: [expect.stringMatching(/^rows: must NOT have duplicate items/)],
      });
    });

    it('context contract is checked before the fields owned by the policy', async () => {
      const res = await create({ externalRunId: run(), stepRef: 's', policy: contractKey, approvers: ['x@example.com'] });
      expectError(res, 422, { error: 'context_contract_violation', policy: contractKey, violations: ['amount: is required'] });
    });

    it('a plain number and an enriched {value, src} number both satisfy the contract', async () => {
      const plain = await create({ externalRunId: run(), stepRef: 's', policy: contractKey, context: { data: { amount: 5 } } });
      expect({ status: plain.status, reason: plain.body.reason, policyVersion: plain.body.policyVersion }).toEqual({
        status: 201,
        reason: 'created',
        policyVersion: 1,
      });
      const enriched = await create({ externalRunId: run(), stepRef: 's', policy: contractKey, context: { data: { amount: { value: 5, src: 'crm' } } } });
      expect(enriched.status).toBe(201);
      const got = await sessionGet(enriched.body.decisionId);
      expect(got.body.context).toEqual({ data: { amount: { value: 5, src: 'crm' } } });
      expect(got.body).toMatchObject({ policy: contractKey, policyVersion: 1, approvers: [approver, 'quinn@example.com'] });
    });

    it('approvers, approvalsRequired, rejectionsRequired and timeoutSec belong to the policy: 422 field_owned_by_policy', async () => {
      const base = { stepRef: 's', policy: contractKey, context: { data: { amount: 1 } } };
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{ approvers: ['x@example.com'] }, ['approvers']],
        [{ approvalsRequired: 1 }, ['approvalsRequired']],
        [{ rejectionsRequired: 1 }, ['rejectionsRequired']],
        [{ timeoutSec: 60 }, ['timeoutSec']],
        [{ approvers: [approver], approvalsRequired: 2, timeoutSec: 5 }, ['approvers', 'approvalsRequired', 'timeoutSec']],
      ];
      for (const [extra, fields] of cases) {
        const externalRunId = run('owned');
        const res = await create({ externalRunId, ...base, ...extra });
        expectError(res, 422, { error: 'field_owned_by_policy', policy: contractKey, fields });
        for (const f of fields) expect(res.body.message).toContain(f);
        await expectNothingStored(externalRunId, 's');
      }
    });

    it('assigneeEmail must be one of the policy approvers (case-insensitive)', async () => {
      const externalRunId = run('assignee');
      const res = await create({ externalRunId, stepRef: 's', policy: contractKey, assigneeEmail: 'stranger@example.com', context: { data: { amount: 1 } } });
      expectError(res, 422, { error: 'field_owned_by_policy', policy: contractKey, fields: ['assigneeEmail'] });
      expect(res.body.message).toContain('stranger@example.com');
      await expectNothingStored(externalRunId, 's');

      const ok = await create({
        externalRunId: run(),
        stepRef: 's',
        policy: contractKey,
        assigneeEmail: 'Quinn@Example.COM',
        context: { data: { amount: 1 } },
      });
      expect(ok.status).toBe(201);
      expect((await workerGet(ok.body.decisionId)).body).toMatchObject({ assigneeEmail: 'quinn@example.com', approvers: [approver, 'quinn@example.com'] });
    });

    it('a policy with no approvers: 422 approver_required', async () => {
      const saved = await upsertPolicy({ name: 'empty-one' });
      expect(saved.status).toBe(201);
      expect(saved.body).toMatchObject({ key: 'empty-one', version: 1 });
      const externalRunId = run('empty');
      expectError(await create({ externalRunId, stepRef: 's', policy: 'empty-one' }), 422, { error: 'approver_required', policy: 'empty-one' });
      await expectNothingStored(externalRunId, 's');
      // saved as a draft, but check and the policy view say no decision can open under it
      const check = await stack.http('POST', '/v1/worker/policies/check', { token: apiKey, body: { keys: ['empty-one'] } });
      expect(check.body).toEqual({
        ok: false,
        results: [{ key: 'empty-one', status: 'unsatisfiable', reason: expect.stringMatching(/names no approvers/), approversToVerify: [] }],
      });
      const view = await stack.http('GET', '/v1/policies/empty-one', { token: admin });
      expect(view.body.warnings).toEqual([{ code: 'no_approvers', message: expect.stringMatching(/approver_required/) }]);
    });

    it('a signature policy without esign: 422 artifact_required; with esign the decision requires the signature', async () => {
      const signer = `signer-${Date.now().toString(36)}@example.com`;
      const reg = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email: signer, name: 'Signer', methods: [{ surface: 'esign' }] } });
      expect(reg.status).toBe(201);
      const key = `signed-${Date.now().toString(36)}`;
      // Unverified esign method: the policy cannot be saved yet.
      const refused = await upsertPolicy({ key, name: 'Signed', requiresSignature: true, defaults: { approvers: [signer] } });
      expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 422, error: 'unsatisfiable_policy' });
      const ver = await stack.http('POST', `/v1/approvers/${reg.body.id}/verify`, { token: admin, body: { surface: 'esign', status: 'verified' } });
      expect(ver.status).toBe(200);
      const saved = await upsertPolicy({ key, name: 'Signed', requiresSignature: true, defaults: { approvers: [signer] } });
      expect(saved.status).toBe(201);

      const externalRunId = run('sig');
      expectError(await create({ externalRunId, stepRef: 's', policy: key }), 422, { error: 'artifact_required', policy: key });
      await expectNothingStored(externalRunId, 's');

      const ok = await create({ externalRunId: run('sig'), stepRef: 's', policy: key, esign: { envelopeId: 'env-42' } });
      expect({ status: ok.status, reason: ok.body.reason, policyVersion: ok.body.policyVersion }).toEqual({ status: 201, reason: 'created', policyVersion: 1 });
      expect((await workerGet(ok.body.decisionId)).body).toMatchObject({ requiresSignature: true, esign: { envelopeId: 'env-42' }, approvers: [signer] });
    });

    it('policyVersion pin: the current version is accepted; after a change the old one is 409 policy_version_mismatch with currentVersion', async () => {
      const key = `pinned-${Date.now().toString(36)}`;
      const v1 = await upsertPolicy({ key, name: 'Pinned', defaults: { approvers: [approver] } });
      expect(v1.body).toMatchObject({ version: 1 });
      const ok = await create({ externalRunId: run(), stepRef: 's', policy: key, policyVersion: 1 });
      expect({ status: ok.status, policyVersion: ok.body.policyVersion, policyVersionId: ok.body.policyVersionId }).toEqual({
        status: 201,
        policyVersion: 1,
        policyVersionId: v1.body.versionId,
      });

      const v2 = await upsertPolicy({ key, name: 'Pinned', defaults: { approvers: [approver, 'rae@example.com'] } });
      expect(v2.body).toMatchObject({ version: 2 });
      const externalRunId = run('pin');
      const stale = await create({ externalRunId, stepRef: 's', policy: key, policyVersion: 1 });
      expectError(stale, 409, { error: 'policy_version_mismatch', policy: key, currentVersion: 2 });
      await expectNothingStored(externalRunId, 's');
      const future = await create({ externalRunId: run(), stepRef: 's', policy: key, policyVersion: 3 });
      expectError(future, 409, { error: 'policy_version_mismatch', policy: key, currentVersion: 2 });

      const current = await create({ externalRunId: run(), stepRef: 's', policy: key, policyVersion: 2 });
      expect({ status: current.status, policyVersion: current.body.policyVersion, policyVersionId: current.body.policyVersionId }).toEqual({
        status: 201,
        policyVersion: 2,
        policyVersionId: v2.body.versionId,
      });
      expect((await workerGet(current.body.decisionId)).body).toMatchObject({
        policyVersion: 2,
        policyVersionId: v2.body.versionId,
        approvers: [approver, 'rae@example.com'],
      });

      const unpinned = await create({ externalRunId: run(), stepRef: 's', policy: key });
      expect(unpinned.body.policyVersion).toBe(2);

      expectInvalid(await create({ externalRunId: run(), stepRef: 's', policy: key, policyVersion: 0 }), 'body.policyVersion');
      expectInvalid(await create({ externalRunId: run(), stepRef: 's', approvers: [approver], policyVersion: 1 }), 'body.policyVersion');
    });

    it('required:false with a valid policy: 200 {approvalNeeded:false, reason:"not_required"} and no decision', async () => {
      const externalRunId = run('notreq');
      const res = await create({ externalRunId, stepRef: 's', policy: contractKey, required: false, context: { data: { amount: 99999 } } });
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { approvalNeeded: false, reason: 'not_required' } });
      await expectNothingStored(externalRunId, 's');
    });

    it('required:false still checks owned fields and approvers (the gate runs first)', async () => {
      const owned = await create({ externalRunId: run(), stepRef: 's', policy: contractKey, required: false, timeoutSec: 5, context: { data: { amount: 1 } } });
      expectError(owned, 422, { error: 'field_owned_by_policy', policy: contractKey, fields: ['timeoutSec'] });
      expectError(await create({ externalRunId: run(), stepRef: 's', policy: 'empty-one', required: false }), 422, {
        error: 'approver_required',
        policy: 'empty-one',
      });
    });

    describe('legacy floor', () => {
      const floorKey = `floor-${Date.now().toString(36)}`;
      beforeAll(async () => {
        const res = await upsertPolicy({
          key: floorKey,
          name: 'Floor',
          defaults: { approvers: [approver] },
          floor: [{ field: 'amount', op: 'gt', value: 1000 }],
        });
        expect(res.status).toBe(201);
      });

      it('a matching floor forces a review even with required:false: 201 reason "floor"', async () => {
        const externalRunId = run('floor');
        const res = await create({ externalRunId, stepRef: 's', policy: floorKey, required: false, context: { data: { amount: 5000 } } });
        expect({ status: res.status, body: res.body }).toEqual({
          status: 201,
          body: {
            approvalNeeded: true,
            decisionId: expect.stringMatching(ID),
            reason: 'floor',
            status: 'PENDING',
            expiresAt: null,
            policyVersion: 1,
            policyVersionId: expect.any(String),
          },
        });
        const got = await sessionGet(res.body.decisionId);
        expect(got.body.timeline[0]).toMatchObject({ type: 'created', reason: 'floor', policy: floorKey, policyVersion: 1 });
      });

      it('an enriched value is seen as its plain value by the floor', async () => {
        const res = await create({
          externalRunId: run('floor'),
          stepRef: 's',
          policy: floorKey,
          required: false,
          context: { data: { amount: { value: 2000, src: 'erp' } } },
        });
        expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 201, reason: 'floor' });
      });

      it('a floor that does not match, or names a missing field, leaves it not required', async () => {
        for (const data of [{ amount: 10 }, { amount: 1000 }, { total: 5000 }, {}, undefined]) {
          const externalRunId = run('floor');
          const res = await create({ externalRunId, stepRef: 's', policy: floorKey, required: false, ...(data ? { context: { data } } : {}) });
          expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { approvalNeeded: false, reason: 'not_required' } });
          await expectNothingStored(externalRunId, 's');
        }
      });

      it('with required omitted the floor does not change the reason', async () => {
        const res = await create({ externalRunId: run('floor'), stepRef: 's', policy: floorKey, context: { data: { amount: 5000 } } });
        expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 201, reason: 'created' });
      });
    });
  });

  describe('ad-hoc decisions (no policy)', () => {
    it('approvers alone, assigneeEmail alone, or both: the approver set is their union; quorum defaults to 1', async () => {
      const a = await expectCreated({ externalRunId: run('adhoc'), stepRef: 's', approvers: ['Ann@Example.com', 'bob@example.com'] });
      const ga = await sessionGet(a);
      expect(ga.body).toMatchObject({
        approvers: ['ann@example.com', 'bob@example.com'],
        assigneeEmail: null,
        policy: null,
        policyVersion: null,
        policyVersionId: null,
      });
      expect(ga.body.tally).toEqual({ approvals: 0, rejections: 0, approvalsRequired: 1, rejectionsRequired: 1 });

      const b = await expectCreated({ externalRunId: run('adhoc'), stepRef: 's', assigneeEmail: 'cy@example.com' });
      expect((await sessionGet(b)).body).toMatchObject({ approvers: ['cy@example.com'], assigneeEmail: 'cy@example.com' });

      const c = await expectCreated({
        externalRunId: run('adhoc'),
        stepRef: 's',
        approvers: ['ann@example.com'],
        assigneeEmail: 'dee@example.com',
        approvalsRequired: 2,
        rejectionsRequired: 2,
      });
      const gc = await sessionGet(c);
      expect(gc.body).toMatchObject({ approvers: ['ann@example.com', 'dee@example.com'], assigneeEmail: 'dee@example.com' });
      expect(gc.body.tally).toEqual({ approvals: 0, rejections: 0, approvalsRequired: 2, rejectionsRequired: 2 });

      const dup = await expectCreated({
        externalRunId: run('adhoc'),
        stepRef: 's',
        approvers: ['ann@example.com', 'ANN@example.com'],
        assigneeEmail: 'ann@example.com',
      });
      expect((await sessionGet(dup)).body.approvers).toEqual(['ann@example.com']);
    });

    it('a quorum larger than the approver set is 422 unsatisfiable_policy and nothing is created', async () => {
      const externalRunId = run('unsat');
      const res = await create({ externalRunId, stepRef: 's', approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 3 });
      expectError(res, 422, { error: 'unsatisfiable_policy', required: 3, available: 2, field: 'approvalsRequired' });
      await expectNothingStored(externalRunId, 's');
      const rej = await create({ externalRunId: run('unsat'), stepRef: 's', assigneeEmail: 'a@example.com', rejectionsRequired: 2 });
      expectError(rej, 422, { error: 'unsatisfiable_policy', required: 2, available: 1, field: 'rejectionsRequired' });
      // Duplicates do not count twice.
      const dupes = await create({ externalRunId: run('unsat'), stepRef: 's', approvers: ['a@example.com', 'a@example.com'], approvalsRequired: 2 });
      expectError(dupes, 422, { error: 'unsatisfiable_policy', required: 2, available: 1, field: 'approvalsRequired' });
    });

    it('nobody named: 422 approver_required, whether required is true or false', async () => {
      const externalRunId = run('nobody');
      expectError(await create({ externalRunId, stepRef: 's' }), 422, { error: 'approver_required' });
      expectError(await create({ externalRunId, stepRef: 's', required: false }), 422, { error: 'approver_required' });
      await expectNothingStored(externalRunId, 's');
    });

    it('a disabled approver cannot answer an ad-hoc decision: left out of the set, counted out of the quorum, refused as assignee', async () => {
      const reg = await stack.http('POST', '/v1/approvers/', { token: admin, body: { email: 'zoe@example.com' } });
      expect((await stack.http('POST', `/v1/approvers/${reg.body.id}/disable`, { token: admin })).status).toBe(200);

      const alone = run('zoe-alone');
      expectError(await create({ externalRunId: alone, stepRef: 's', approvers: ['zoe@example.com'] }), 422, {
        error: 'approver_required',
        message: expect.stringMatching(/disabled/),
      });
      await expectNothingStored(alone, 's');
      expectError(await create({ externalRunId: run(), stepRef: 's', approvers: ['zoe@example.com', 'amy@example.com'], approvalsRequired: 2 }), 422, {
        error: 'unsatisfiable_policy',
        required: 2,
        available: 1,
        field: 'approvalsRequired',
      });
      expectError(await create({ externalRunId: run(), stepRef: 's', approvers: ['amy@example.com'], assigneeEmail: 'zoe@example.com' }), 422, {
        error: 'approver_required',
        message: expect.stringMatching(/zoe@example.com is a disabled approver/),
      });

      const mixed = await create({ externalRunId: run(), stepRef: 's', approvers: ['zoe@example.com', 'amy@example.com'] });
      expect(mixed.status).toBe(201);
      expect((await workerGet(mixed.body.decisionId)).body.approvers).toEqual(['amy@example.com']);
      const zoe = stack.session({ org: orgId, email: 'zoe@example.com' });
      expectError(await stack.http('POST', `/v1/decisions/${mixed.body.decisionId}/decide`, { token: zoe, body: { decision: 'approve' } }), 403, {
        error: 'not_an_approver',
      });

      // under a policy, a disabled approver cannot be the assignee either
      expect((await upsertPolicy({ key: 'with-zoe', name: 'with zoe', defaults: { approvers: ['amy@example.com', 'zoe@example.com'] } })).status).toBe(201);
      expectError(await create({ externalRunId: run(), stepRef: 's', policy: 'with-zoe', assigneeEmail: 'zoe@example.com' }), 422, {
        error: 'field_owned_by_policy',
        policy: 'with-zoe',
        fields: ['assigneeEmail'],
        message: expect.stringMatching(/zoe@example.com is disabled/),
      });
    });

    it('required:false ad-hoc: 200 not_required and no decision', async () => {
      const externalRunId = run('adhoc-nr');
      const res = await create({ externalRunId, stepRef: 's', approvers: ['a@example.com'], required: false });
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { approvalNeeded: false, reason: 'not_required' } });
      await expectNothingStored(externalRunId, 's');
    });

    it('approvers: 1 to 50 valid emails; 0 or 51 is 400; quorum fields are integers > 0', async () => {
      const fifty = Array.from({ length: 50 }, (_, i) => `p${i}@example.com`);
      const id = await expectCreated({ externalRunId: run('fifty'), stepRef: 's', approvers: fifty, approvalsRequired: 50 });
      expect((await sessionGet(id)).body.approvers).toEqual(fifty);
      expectInvalid(await create({ externalRunId: run(), stepRef: 's', approvers: [...fifty, 'p50@example.com'] }), 'body.approvers');
      expectInvalid(await create({ externalRunId: run(), stepRef: 's', approvers: [] }), 'body.approvers');
      expectInvalid(await create({ externalRunId: run(), stepRef: 's', approvers: ['not-an-email'] }), 'body.approvers.0');
      expectInvalid(await create(adHoc({ approvalsRequired: 0 })), 'body.approvalsRequired');
      expectInvalid(await create(adHoc({ rejectionsRequired: 0 })), 'body.rejectionsRequired');
    });

    it('ad-hoc timeoutSec sets expiresAt', async () => {
      const res = await create(adHoc({ timeoutSec: 120 }));
      expect(res.status).toBe(201);
      const created = Date.parse((await workerGet(res.body.decisionId)).body.createdAt);
      expect(Date.parse(res.body.expiresAt) - created).toBe(120_000);
    });
  });

  describe('authentication of decision creation', () => {
    it('no token is 401; a session is 403 forbidden; another org key creates in its own org only', async () => {
      const none = await stack.http('POST', '/v1/worker/decisions', { body: adHoc() });
      expect({ status: none.status, error: none.body.error }).toEqual({ status: 401, error: 'unauthorized' });
      const session = await create(adHoc(), admin);
      expect({ status: session.status, error: session.body.error }).toEqual({ status: 403, error: 'forbidden' });
    });
  });
});
