import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@approvals/shared/testing';
import { startStack, type Stack } from '../../../test/helpers/stack';
import { ISO, SERVICES, countType, decide, expectError, expectInvalid, openDecision, readDecision, timelineTypes } from './actions.helpers';

const A = 'ana@vote.example.com';
const B = 'ben@vote.example.com';
const C = 'cai@vote.example.com';
const OUTSIDER = 'olga@vote.example.com';

const SELECT = {
  type: 'select',
  options: [
    { id: 'ship', label: 'Ship it' },
    { id: 'hold', label: 'Hold' },
    { id: 'drop', label: 'Drop' },
  ],
};

/** A local OpenAI-compatible chat-completions server that records what it was sent. */
async function startModelServer(reply: string) {
  const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders; body: any }> = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      let body: any = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        /* keep the text */
      }
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (req.method === 'POST' && req.url === '/chat/completions') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'cmpl-1',
            object: 'chat.completion',
            model: body?.model,
            choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
          }),
        );
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'not found' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { port, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('decisions: votes, responses, drafts, refine, cancel', () => {
  let stack: Stack;
  let org: string;
  let admin: string;
  let apiKey: string;
  let keyId: string;
  let a: string;
  let b: string;
  let c: string;
  let outsider: string;

  beforeAll(async () => {
    // The stand-in model servers listen on loopback: allow private targets, as a local setup would.
    stack = await startStack({ services: SERVICES, label: 'decvote', env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
    ({ org, admin, apiKey, keyId } = await stack.newOrg());
    a = stack.session({ org, email: A });
    b = stack.session({ org, email: B });
    c = stack.session({ org, email: C });
    outsider = stack.session({ org, email: OUTSIDER });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const open = (body: Record<string, unknown> = {}) => openDecision(stack, apiKey, { approvers: [A, B, C], ...body });

  describe('one vote per reviewer and thresholds', () => {
    it('a second vote by the same reviewer is 409 already_voted and changes nothing', async () => {
      const id = await open({ approvalsRequired: 2 });
      const first = await decide(stack, a, id, { decision: 'approve' });
      expect(first.status).toBe(200);
      expect(first.body).toEqual({
        recorded: true,
        decisionId: id,
        status: 'PENDING',
        tally: { approvals: 1, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 },
      });

      const again = await decide(stack, a, id, { decision: 'approve' });
      expectError(again, 409, 'already_voted');
      // A reject would reject the decision (rejectionsRequired 1) if it were counted.
      const flip = await decide(stack, a, id, { decision: 'reject', note: 'changed my mind' });
      expectError(flip, 409, 'already_voted');

      const d = await readDecision(stack, a, id);
      expect(d.status).toBe('PENDING');
      expect(d.tally).toEqual({ approvals: 1, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 });
      expect(d.decidedBy).toBeNull();
      expect(countType(d, 'vote')).toBe(1);
    });

    it('already_voted wins over a second vote whose responseValue would be invalid', async () => {
      const id = await open({ approvalsRequired: 2, responseSpec: SELECT });
      expect((await decide(stack, a, id, { decision: 'approve', responseValue: ['ship'] })).body.status).toBe('PENDING');
      expectError(await decide(stack, a, id, { decision: 'approve' }), 409, 'already_voted');
      expectError(await decide(stack, a, id, { decision: 'approve', responseValue: ['hold'] }), 409, 'already_voted');
      const d = await readDecision(stack, a, id);
      expect(d.tally.approvals).toBe(1);
      expect(d.responseValue).toBeNull();
    });

    it('approvalsRequired 2 of 3: the first approval leaves PENDING, the second approves; decidedBy and note read back', async () => {
      const id = await open({ approvalsRequired: 2 });
      const first = await decide(stack, a, id, { decision: 'approve', note: 'looks fine' });
      expect(first.body).toEqual({
        recorded: true,
        decisionId: id,
        status: 'PENDING',
        tally: { approvals: 1, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 },
      });
      const mid = await readDecision(stack, b, id);
      expect({ status: mid.status, decidedBy: mid.decidedBy, note: mid.note, resolvedAt: mid.resolvedAt }).toEqual({
        status: 'PENDING',
        decidedBy: null,
        note: null,
        resolvedAt: null,
      });

      const second = await decide(stack, b, id, { decision: 'approve', note: 'ship it' });
      expect(second.status).toBe(200);
      expect(second.body).toEqual({
        recorded: true,
        decisionId: id,
        status: 'APPROVED',
        tally: { approvals: 2, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 },
      });

      const d = await readDecision(stack, c, id);
      expect(d).toMatchObject({ id, status: 'APPROVED', decidedBy: B, note: 'ship it', responseValue: null, consumed: false });
      expect(d.resolvedAt).toMatch(ISO);
      expect(d.tally).toEqual({ approvals: 2, rejections: 0, approvalsRequired: 2, rejectionsRequired: 1 });
      expect(timelineTypes(d)).toEqual(['created', 'vote', 'vote', 'resolved']);
      expect(d.timeline[1]).toMatchObject({ type: 'vote', actor: A, choice: 'approve', note: 'looks fine' });
      expect(d.timeline[3]).toMatchObject({ type: 'resolved', actor: B, status: 'APPROVED' });

      const worker = await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey });
      expect(worker.status).toBe(200);
      expect(worker.body).toMatchObject({ id, status: 'APPROVED', decidedBy: B, note: 'ship it', responseValue: null });
    });

    it('rejectionsRequired defaults to 1: one reject rejects even when approvals need 2', async () => {
      const id = await open({ approvalsRequired: 2 });
      const res = await decide(stack, c, id, { decision: 'reject', note: 'not now' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        recorded: true,
        decisionId: id,
        status: 'REJECTED',
        tally: { approvals: 0, rejections: 1, approvalsRequired: 2, rejectionsRequired: 1 },
      });
      const d = await readDecision(stack, a, id);
      expect(d).toMatchObject({ status: 'REJECTED', decidedBy: C, note: 'not now', responseValue: null });
    });

    it('rejectionsRequired 2: the first reject leaves PENDING, the second rejects', async () => {
      const id = await open({ rejectionsRequired: 2 });
      expect((await decide(stack, a, id, { decision: 'reject' })).body.status).toBe('PENDING');
      const second = await decide(stack, b, id, { decision: 'reject', note: 'no' });
      expect(second.body).toEqual({
        recorded: true,
        decisionId: id,
        status: 'REJECTED',
        tally: { approvals: 0, rejections: 2, approvalsRequired: 1, rejectionsRequired: 2 },
      });
    });

    it('a vote on a resolved decision is 409 not_pending with the status', async () => {
      const id = await open();
      expect((await decide(stack, a, id, { decision: 'approve' })).body.status).toBe('APPROVED');
      expectError(await decide(stack, b, id, { decision: 'reject' }), 409, 'not_pending', { status: 'APPROVED' });
      const rejected = await open();
      expect((await decide(stack, a, rejected, { decision: 'reject' })).body.status).toBe('REJECTED');
      expectError(await decide(stack, b, rejected, { decision: 'approve' }), 409, 'not_pending', { status: 'REJECTED' });
      const d = await readDecision(stack, a, id);
      expect(d.tally.rejections).toBe(0);
      expect(countType(d, 'vote')).toBe(1);
    });

    it('retrying the vote that resolved a decision (reply lost) is already_voted with the recorded vote, not not_pending', async () => {
      const id = await open({ responseSpec: SELECT });
      const first = await decide(stack, a, id, { decision: 'approve', note: 'go', responseValue: ['ship'] });
      expect(first.body.status).toBe('APPROVED');
      // The reviewer never saw that answer and sends the same vote again.
      const retry = await decide(stack, a, id, { decision: 'approve', note: 'go', responseValue: ['ship'] });
      expectError(retry, 409, 'already_voted', {
        status: 'APPROVED',
        vote: { choice: 'approve', note: 'go', surface: 'inbox', responseValue: ['ship'], at: expect.stringMatching(ISO) },
      });
      // Someone else still learns that votes are closed.
      expectError(await decide(stack, b, id, { decision: 'approve' }), 409, 'not_pending', { status: 'APPROVED' });
      const d = await readDecision(stack, a, id);
      expect(countType(d, 'vote')).toBe(1);
    });

    it('a vote on an unknown decision is 404', async () => {
      expectError(await decide(stack, a, 'dec_doesnotexist', { decision: 'approve' }), 404, 'not_found');
    });

    it('a decide body outside the schema is 400', async () => {
      const id = await open();
      expectInvalid(await decide(stack, a, id, { decision: 'maybe' }));
      expectInvalid(await decide(stack, a, id, {}));
      expectInvalid(await decide(stack, a, id, { decision: 'approve', extra: 1 }));
      expect((await readDecision(stack, a, id)).tally.approvals).toBe(0);
    });
  });

  describe('who may vote', () => {
    it('a non-approver is refused with 403 not_an_approver; not counted; the timeline shows vote_refused', async () => {
      const id = await open();
      const res = await decide(stack, outsider, id, { decision: 'approve' });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'not_an_approver', message: expect.any(String) });

      const d = await readDecision(stack, a, id);
      expect(d.status).toBe('PENDING');
      expect(d.tally).toEqual({ approvals: 0, rejections: 0, approvalsRequired: 1, rejectionsRequired: 1 });
      expect(timelineTypes(d)).toEqual(['created', 'vote_refused']);
      expect(d.timeline[1]).toMatchObject({ type: 'vote_refused', actor: OUTSIDER, choice: 'approve', at: expect.stringMatching(ISO) });

      // the refused attempt reaches the audit log
      const entry = await waitFor(
        async () => {
          const audit = await stack.http('GET', '/v1/audit/?action=decision.vote_refused', { token: admin });
          expect(audit.status).toBe(200);
          return audit.body.entries.find((e: { target: string; actor: string }) => e.target === id && e.actor === OUTSIDER);
        },
        { what: 'the refused vote in the audit log' },
      );
      expect(entry).toMatchObject({ action: 'decision.vote_refused', actor: OUTSIDER, target: id, at: expect.stringMatching(ISO) });

      // the real approver still decides
      expect((await decide(stack, a, id, { decision: 'approve' })).body.status).toBe('APPROVED');
    });

    it('an API key gets 403 not_an_approver even for an id that does not exist', async () => {
      const res = await decide(stack, apiKey, 'dec_does_not_exist', { decision: 'approve' });
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('not_an_approver');
    });

    it('an API key cannot vote: 403 not_an_approver, vote_refused on the timeline and in the audit log', async () => {
      const id = await open();
      const res = await decide(stack, apiKey, id, { decision: 'approve' });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'not_an_approver', message: expect.any(String) });
      const d = await readDecision(stack, a, id);
      expect(d.status).toBe('PENDING');
      expect(d.tally.approvals).toBe(0);
      expect(timelineTypes(d)).toEqual(['created', 'vote_refused']);
      expect(d.timeline[1]).toMatchObject({ type: 'vote_refused', actor: keyId, choice: 'approve' });

      await waitFor(
        async () => {
          const audit = await stack.http('GET', '/v1/audit/?action=decision.vote_refused', { token: admin });
          return audit.body.entries.find((e: { target: string; action: string }) => e.target === id && e.action === 'decision.vote_refused');
        },
        { what: 'the API-key vote in the audit log' },
      );
    });

    it('the approver check also applies to a resolved decision: a non-approver gets 403, not 409', async () => {
      const id = await open();
      await decide(stack, a, id, { decision: 'approve' });
      expectError(await decide(stack, outsider, id, { decision: 'reject' }), 403, 'not_an_approver');
    });
  });

  describe('responseValue against responseSpec', () => {
    it('select: an array of option ids within 1..1 by default; a wrong id, too many, or a string is 400', async () => {
      const id = await open({ responseSpec: SELECT });
      expectInvalid(await decide(stack, a, id, { decision: 'approve', responseValue: ['nope'] }), 'body.responseValue');
      expectInvalid(await decide(stack, a, id, { decision: 'approve', responseValue: ['ship', 'hold'] }), 'body.responseValue');
      expectInvalid(await decide(stack, a, id, { decision: 'approve', responseValue: 'ship' }), 'body.responseValue');
      expectInvalid(await decide(stack, a, id, { decision: 'approve', responseValue: [] }), 'body.responseValue');
      expectInvalid(await decide(stack, a, id, { decision: 'approve' }), 'body.responseValue');
      // none of those counted, and the reviewer can still vote
      expect((await readDecision(stack, a, id)).tally.approvals).toBe(0);

      const ok = await decide(stack, a, id, { decision: 'approve', responseValue: ['hold'], note: 'hold for a week' });
      expect(ok.status).toBe(200);
      expect(ok.body.status).toBe('APPROVED');
      const d = await readDecision(stack, a, id);
      expect(d).toMatchObject({ status: 'APPROVED', decidedBy: A, note: 'hold for a week', responseValue: ['hold'] });
      const worker = await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey });
      expect(worker.body.responseValue).toEqual(['hold']);
    });

    it('select with min..max takes any count in range', async () => {
      const id = await open({ responseSpec: { ...SELECT, min: 2, max: 3 } });
      expectInvalid(await decide(stack, a, id, { decision: 'approve', responseValue: ['ship'] }), 'body.responseValue');
      expectInvalid(await decide(stack, a, id, { decision: 'approve', responseValue: ['ship', 'ship'] }), 'body.responseValue');
      const ok = await decide(stack, a, id, { decision: 'approve', responseValue: ['ship', 'drop'] });
      expect(ok.status).toBe(200);
      expect((await readDecision(stack, a, id)).responseValue).toEqual(['ship', 'drop']);
    });

    it('select with min 0 accepts an approval that chooses nothing', async () => {
      const id = await open({ approvalsRequired: 2, responseSpec: { ...SELECT, min: 0, max: 2 } });
      const none = await decide(stack, a, id, { decision: 'approve' });
      expect(none.status).toBe(200);
      expect(none.body.status).toBe('PENDING');
      const empty = await decide(stack, b, id, { decision: 'approve', responseValue: [] });
      expect(empty.status).toBe(200);
      expect(empty.body.status).toBe('APPROVED');
      expect((await readDecision(stack, a, id)).responseValue).toEqual([]);
    });

    it('text takes a string; a number is 400', async () => {
      const id = await open({ responseSpec: { type: 'text', multiline: true } });
      expectInvalid(await decide(stack, a, id, { decision: 'approve', responseValue: 42 }), 'body.responseValue');
      expectInvalid(await decide(stack, a, id, { decision: 'approve', responseValue: ['x'] }), 'body.responseValue');
      const ok = await decide(stack, a, id, { decision: 'approve', responseValue: 'Send on Monday.' });
      expect(ok.status).toBe(200);
      expect((await readDecision(stack, a, id)).responseValue).toBe('Send on Monday.');
    });

    it('approval (explicit or by default) takes no responseValue', async () => {
      for (const spec of [{ responseSpec: { type: 'approval' } }, {}]) {
        const id = await open(spec);
        for (const value of [true, 'yes', ['ship'], 0, { a: 1 }]) {
          expectInvalid(await decide(stack, a, id, { decision: 'approve', responseValue: value }), 'body.responseValue');
        }
        expectInvalid(await decide(stack, a, id, { decision: 'reject', responseValue: 'no' }), 'body.responseValue');
        const ok = await decide(stack, a, id, { decision: 'approve' });
        expect(ok.body.status).toBe('APPROVED');
        expect((await readDecision(stack, a, id)).responseValue).toBeNull();
      }
    });

    it('a reject needs no responseValue, whatever the spec', async () => {
      const sel = await open({ responseSpec: SELECT });
      const r1 = await decide(stack, a, sel, { decision: 'reject', note: 'none of these' });
      expect(r1.status).toBe(200);
      expect(r1.body.status).toBe('REJECTED');
      expect((await readDecision(stack, a, sel)).responseValue).toBeNull();

      const txt = await open({ responseSpec: { type: 'text' } });
      const r2 = await decide(stack, a, txt, { decision: 'reject' });
      expect(r2.status).toBe(200);
      expect(r2.body.status).toBe('REJECTED');
    });
  });

  describe('refined draft (PUT output)', () => {
    const proposed = { title: 'Reply to customer', format: 'markdown', content: 'Dear customer, **no**.' };

    it('output is the proposed draft until a refined one is saved; then the refined one', async () => {
      const id = await open({ proposedOutput: proposed });
      const before = await readDecision(stack, a, id);
      expect({ refinedOutput: before.refinedOutput, output: before.output, proposedOutput: before.proposedOutput }).toEqual({
        refinedOutput: null,
        output: proposed,
        proposedOutput: proposed,
      });

      const refined = { content: 'Dear customer, thank you. We cannot do this yet.', format: 'markdown', title: 'Reply' };
      const put = await stack.http('PUT', `/v1/decisions/${id}/output`, { token: b, body: refined });
      expect(put.status).toBe(200);
      expect(put.body).toEqual({ decisionId: id, refinedOutput: refined, output: refined });

      const after = await readDecision(stack, a, id);
      expect({ refinedOutput: after.refinedOutput, output: after.output, proposedOutput: after.proposedOutput }).toEqual({
        refinedOutput: refined,
        output: refined,
        proposedOutput: proposed,
      });
      expect(after.timeline.find((t: { type: string }) => t.type === 'output_saved')).toMatchObject({ actor: B });

      // saving again replaces the draft
      const v3 = { content: 'v3' };
      expect((await stack.http('PUT', `/v1/decisions/${id}/output`, { token: a, body: v3 })).status).toBe(200);
      expect((await decide(stack, a, id, { decision: 'approve' })).body.status).toBe('APPROVED');
      const worker = await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey });
      expect({ refinedOutput: worker.body.refinedOutput, output: worker.body.output }).toEqual({ refinedOutput: v3, output: v3 });

      // once resolved, the draft is final
      expectError(await stack.http('PUT', `/v1/decisions/${id}/output`, { token: a, body: { content: 'too late' } }), 409, 'not_pending', {
        status: 'APPROVED',
      });
      expect((await readDecision(stack, a, id)).output).toEqual(v3);
    });

    it('an approved decision never refined reads back the proposed output', async () => {
      const id = await open({ proposedOutput: proposed });
      await decide(stack, a, id, { decision: 'approve' });
      const worker = await stack.http('GET', `/v1/worker/decisions/${id}`, { token: apiKey });
      expect({ status: worker.body.status, refinedOutput: worker.body.refinedOutput, output: worker.body.output }).toEqual({
        status: 'APPROVED',
        refinedOutput: null,
        output: proposed,
      });
    });

    it('a decision without proposedOutput cannot take a draft: 409', async () => {
      const id = await open();
      const res = await stack.http('PUT', `/v1/decisions/${id}/output`, { token: a, body: { content: 'x' } });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: expect.any(String), message: expect.any(String) });
      const d = await readDecision(stack, a, id);
      expect({ refinedOutput: d.refinedOutput, output: d.output }).toEqual({ refinedOutput: null, output: null });
    });

    it("only the decision's approvers may change or refine the draft: anyone else (an admin too) is 403 not_an_approver, nothing changes", async () => {
      const id = await open({ proposedOutput: proposed });
      const admin = stack.session({ org, email: 'boss@vote.example.com', role: 'admin' });
      for (const token of [outsider, admin]) {
        expectError(await stack.http('PUT', `/v1/decisions/${id}/output`, { token, body: { content: 'transfer everything' } }), 403, 'not_an_approver');
        expectError(await stack.http('POST', `/v1/decisions/${id}/refine`, { token, body: { feedback: 'make it worse' } }), 403, 'not_an_approver');
      }
      const d = await readDecision(stack, a, id);
      expect({ refinedOutput: d.refinedOutput, output: d.output }).toEqual({ refinedOutput: null, output: proposed });
      expect(d.timeline.map((t: { type: string }) => t.type)).toEqual(['created']);
    });

    it('a malformed draft is 400', async () => {
      const id = await open({ proposedOutput: proposed });
      expectInvalid(await stack.http('PUT', `/v1/decisions/${id}/output`, { token: a, body: { title: 'no content' } }));
      expectInvalid(await stack.http('PUT', `/v1/decisions/${id}/output`, { token: a, body: { content: 'x', format: 'html' } }));
      expect((await readDecision(stack, a, id)).refinedOutput).toBeNull();
    });
  });

  describe('refine', () => {
    const proposed = { title: 'Release note', format: 'text', content: 'We fixed stuff.' };

    it('without a configured model: 409 model_not_configured', async () => {
      const other = await stack.newOrg();
      const id = await openDecision(stack, other.apiKey, { approvers: [A], proposedOutput: proposed });
      const res = await stack.http('POST', `/v1/decisions/${id}/refine`, {
        token: stack.session({ org: other.org, email: A }),
        body: { feedback: 'more detail' },
      });
      expectError(res, 409, 'model_not_configured');
    });

    it('with a local OpenAI-compatible server: returns its draft, commits nothing, logs refined; the key is never read back', async () => {
      const model = await startModelServer('We fixed the login timeout and two crashes.');
      try {
        const other = await stack.newOrg();
        const reviewer = stack.session({ org: other.org, email: A });
        const member = stack.session({ org: other.org, email: B });
        const body = { baseUrl: `http://127.0.0.1:${model.port}`, model: 'm1', apiKey: 'sk-test' };

        // settings are admin-only
        expect((await stack.http('PUT', '/v1/settings/llm', { token: member, body })).status).toBe(403);
        // the model is reached over http(s) only
        for (const baseUrl of ['file:///etc/passwd', 'ftp://models.example.com/v1']) {
          const bad = await stack.http('PUT', '/v1/settings/llm', { token: other.admin, body: { ...body, baseUrl } });
          expect(bad.status).toBe(400);
          expect(bad.body.issues).toContainEqual({ path: 'body.baseUrl', message: expect.stringMatching(/http\(s\)/) });
        }
        expect((await stack.http('GET', '/v1/settings/llm', { token: other.admin })).body.configured).toBe(false);

        const put = await stack.http('PUT', '/v1/settings/llm', { token: other.admin, body });
        expect(put.status).toBe(200);
        expect(put.body).toEqual({ configured: true, baseUrl: body.baseUrl, model: 'm1', apiKeySet: true, updatedAt: expect.stringMatching(ISO) });
        expect(put.text).not.toContain('sk-test');
        const get = await stack.http('GET', '/v1/settings/llm', { token: other.admin });
        expect(get.status).toBe(200);
        expect(get.body).toEqual({ configured: true, baseUrl: body.baseUrl, model: 'm1', apiKeySet: true, updatedAt: expect.stringMatching(ISO) });
        expect(get.text).not.toContain('sk-test');

        const id = await openDecision(stack, other.apiKey, { approvers: [A], proposedOutput: proposed, context: { title: 'Ship v2' } });
        const res = await stack.http('POST', `/v1/decisions/${id}/refine`, { token: reviewer, body: { feedback: 'name the fixes' } });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({
          decisionId: id,
          draft: { content: 'We fixed the login timeout and two crashes.', title: 'Release note', format: 'text' },
          model: 'm1',
        });

        expect(model.seen).toHaveLength(1);
        const call = model.seen[0];
        expect({ method: call.method, url: call.url, authorization: call.headers.authorization }).toEqual({
          method: 'POST',
          url: '/chat/completions',
          authorization: 'Bearer sk-test',
        });
        expect(call.body.model).toBe('m1');
        expect(Array.isArray(call.body.messages)).toBe(true);
        const prompt = call.body.messages.map((m: { content: string }) => m.content).join('\n');
        expect(prompt).toContain('We fixed stuff.');
        expect(prompt).toContain('name the fixes');

        const d = await readDecision(stack, reviewer, id);
        expect({ status: d.status, refinedOutput: d.refinedOutput, output: d.output }).toEqual({ status: 'PENDING', refinedOutput: null, output: proposed });
        expect(d.timeline.find((t: { type: string }) => t.type === 'refined')).toMatchObject({ type: 'refined', actor: A, model: 'm1' });

        // a later PUT without apiKey keeps the stored key
        const keep = await stack.http('PUT', '/v1/settings/llm', { token: other.admin, body: { baseUrl: body.baseUrl, model: 'm1' } });
        expect(keep.body.apiKeySet).toBe(true);
        expect((await stack.http('POST', `/v1/decisions/${id}/refine`, { token: reviewer, body: { feedback: 'again' } })).status).toBe(200);
        expect(model.seen[1].headers.authorization).toBe('Bearer sk-test');
      } finally {
        await model.close();
      }
    });

    it('a failing model endpoint is 502 upstream_error and records nothing', async () => {
      const broken = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: 'overloaded' } }));
        });
      });
      await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
      try {
        const other = await stack.newOrg();
        const reviewer = stack.session({ org: other.org, email: A });
        const port = (broken.address() as AddressInfo).port;
        expect(
          (await stack.http('PUT', '/v1/settings/llm', { token: other.admin, body: { baseUrl: `http://127.0.0.1:${port}`, model: 'm1' } })).body.apiKeySet,
        ).toBe(false);
        const id = await openDecision(stack, other.apiKey, { approvers: [A], proposedOutput: proposed });
        expectError(await stack.http('POST', `/v1/decisions/${id}/refine`, { token: reviewer, body: { feedback: 'x' } }), 502, 'upstream_error');
        const d = await readDecision(stack, reviewer, id);
        expect(countType(d, 'refined')).toBe(0);
        expect(d.status).toBe('PENDING');
      } finally {
        await new Promise<void>((resolve) => broken.close(() => resolve()));
      }
    });

    it('refine of a decision without proposedOutput, or with empty feedback, is refused', async () => {
      const id = await open();
      expect((await stack.http('POST', `/v1/decisions/${id}/refine`, { token: a, body: { feedback: 'x' } })).status).toBe(409);
      const withDraft = await open({ proposedOutput: proposed });
      expectInvalid(await stack.http('POST', `/v1/decisions/${withDraft}/refine`, { token: a, body: { feedback: '' } }));
      expectInvalid(await stack.http('POST', `/v1/decisions/${withDraft}/refine`, { token: a, body: {} }));
    });
  });

  describe('cancel', () => {
    const cancel = (id: string, body?: unknown, token = apiKey) => stack.http('POST', `/v1/worker/decisions/${id}/cancel`, { token, body });

    it('PENDING → {cancelled:true}; again → {cancelled:false, status:CANCELLED}', async () => {
      const id = await open();
      const first = await cancel(id, { note: 'no longer needed' });
      expect(first.status).toBe(200);
      expect(first.body).toEqual({ cancelled: true, decisionId: id, status: 'CANCELLED' });
      const again = await cancel(id);
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ cancelled: false, decisionId: id, status: 'CANCELLED' });

      const d = await readDecision(stack, a, id);
      expect(d).toMatchObject({ status: 'CANCELLED', note: 'no longer needed', decidedBy: null });
      expect(d.resolvedAt).toMatch(ISO);
      expect(countType(d, 'cancelled')).toBe(1);
      // votes are closed
      expectError(await decide(stack, a, id, { decision: 'approve' }), 409, 'not_pending', { status: 'CANCELLED' });
    });

    it('cancel of an APPROVED decision changes nothing', async () => {
      const id = await open();
      await decide(stack, a, id, { decision: 'approve', note: 'go' });
      const res = await cancel(id, { note: 'stop' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ cancelled: false, decisionId: id, status: 'APPROVED' });
      const d = await readDecision(stack, a, id);
      expect(d).toMatchObject({ status: 'APPROVED', note: 'go', decidedBy: A });
      expect(countType(d, 'cancelled')).toBe(0);
    });

    it('cancel with a null body works; a session token is refused; an unknown id is 404', async () => {
      const id = await open();
      const res = await stack.http('POST', `/v1/worker/decisions/${id}/cancel`, {
        token: apiKey,
        rawBody: 'null',
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ cancelled: true, decisionId: id, status: 'CANCELLED' });
      expectError(await cancel(await open(), undefined, a), 403, 'forbidden');
      expectError(await cancel('dec_unknown'), 404, 'not_found');
    });
  });
});
