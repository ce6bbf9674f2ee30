import { describe, expect, it } from '@jest/globals';
import { canonicalize, sha256Hex, type ResolvedApprover } from '@approvals/shared';
import { approverSet, bare, checkSatisfiable, contentHash, diffDefinitions, diffValues, normalizeDefinition } from '../src/domain/definition';

/** A registered approver as the resolver returns it. */
function registered(email: string, opts: { disabled?: boolean; esign?: 'pending' | 'verified' | 'failed' } = {}): ResolvedApprover {
  const methods: ResolvedApprover['methods'] = [{ surface: 'inbox', resolvedRef: null, status: 'verified', verifiedAt: '2026-01-01T00:00:00.000Z' }];
  if (opts.esign)
    methods.push({ surface: 'esign', resolvedRef: 'ref', status: opts.esign, verifiedAt: opts.esign === 'verified' ? '2026-01-01T00:00:00.000Z' : null });
  return {
    email,
    approverId: `apr_${email}`,
    registered: true,
    disabled: opts.disabled ?? false,
    channels: [{ channel: 'email', endpoint: email, status: 'verified', verifiedAt: '2026-01-01T00:00:00.000Z' }],
    methods,
  };
}

describe('normalizeDefinition', () => {
  it('keeps absent fields absent and drops null or empty ones, so equal bodies hash equal', () => {
    expect(normalizeDefinition({ defaults: {} })).toEqual({ defaults: {} });
    const withNulls = normalizeDefinition({ defaults: {}, timeoutSec: null, contextSchema: null, requiresSignature: false, floor: [] });
    expect(withNulls).toEqual({ defaults: {} });
    expect(Object.keys(withNulls)).toEqual(['defaults']);
    expect(contentHash(withNulls)).toBe(contentHash(normalizeDefinition({ defaults: {} })));
    expect(normalizeDefinition({ defaults: {}, floor: null })).toEqual({ defaults: {} });
  });

  it('keeps every defaults field and the top-level policy decisions', () => {
    const input = {
      defaults: {
        assigneeEmail: 'lead@example.com',
        route: { channels: ['email' as const, 'chatA' as const], strategy: 'escalate' as const, escalateAfterSec: 600 },
        approvers: ['a@example.com', 'b@example.com'],
        approvalsRequired: 2,
        rejectionsRequired: 1,
      },
      timeoutSec: 3600,
      contextSchema: { type: 'object', required: ['amount'] },
      requiresSignature: true,
      floor: [{ field: 'amount', op: 'gt' as const, value: 1000 }],
    };
    expect(normalizeDefinition(input)).toEqual({
      defaults: input.defaults,
      timeoutSec: 3600,
      contextSchema: { type: 'object', required: ['amount'] },
      requiresSignature: true,
      floor: [{ field: 'amount', op: 'gt', value: 1000 }],
    });
  });

  it('reads legacy surface esign as requiresSignature: true and drops the surface', () => {
    const def = normalizeDefinition({ defaults: { surface: 'esign', approvers: ['a@example.com'] } });
    expect(def).toEqual({ defaults: { approvers: ['a@example.com'] }, requiresSignature: true });
    expect('surface' in def.defaults).toBe(false);
  });

  it.each(['inbox', 'chatA', 'chatB', 'email', 'api'] as const)('drops legacy surface %s without turning on a signature', (surface) => {
    const def = normalizeDefinition({ defaults: { surface, approvalsRequired: 1 } });
    expect(def).toEqual({ defaults: { approvalsRequired: 1 } });
    expect(def.requiresSignature).toBeUndefined();
  });

  it('de-duplicates approvers keeping first-seen order', () => {
    const def = normalizeDefinition({ defaults: { approvers: ['b@example.com', 'a@example.com', 'b@example.com'] } });
    expect(def.defaults.approvers).toEqual(['b@example.com', 'a@example.com']);
  });

  it('does not mutate its input', () => {
    const input = { defaults: { surface: 'esign' as const, approvers: ['a@example.com', 'a@example.com'] } };
    const copy = JSON.parse(JSON.stringify(input));
    normalizeDefinition(input);
    expect(input).toEqual(copy);
  });
});

describe('contentHash', () => {
  it('is the SHA-256 of the JCS form, independent of key order', () => {
    const a = normalizeDefinition({ defaults: { approvers: ['a@example.com'], approvalsRequired: 1 }, timeoutSec: 60 });
    const b = { timeoutSec: 60, defaults: { approvalsRequired: 1, approvers: ['a@example.com'] } };
    expect(contentHash(a)).toBe(sha256Hex(canonicalize(a)));
    expect(contentHash(a)).toBe(contentHash(b));
    expect(contentHash(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(contentHash({ ...a, timeoutSec: 61 })).not.toBe(contentHash(a));
  });
});

describe('diffValues', () => {
  it('answers nothing for equal values, whatever the key order', () => {
    expect(diffValues({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 })).toEqual([]);
    expect(diffValues(undefined, null)).toEqual([]);
  });

  it('walks objects and reports changed, added and removed leaves with dotted paths, sorted', () => {
    expect(
      diffValues(
        { defaults: { approvalsRequired: 1, assigneeEmail: 'x@example.com' }, timeoutSec: 60 },
        { defaults: { approvalsRequired: 2, rejectionsRequired: 1 }, timeoutSec: 60 },
      ),
    ).toEqual([
      { path: 'defaults.approvalsRequired', from: 1, to: 2 },
      { path: 'defaults.assigneeEmail', from: 'x@example.com' },
      { path: 'defaults.rejectionsRequired', to: 1 },
    ]);
  });

  it('compares arrays and scalars whole', () => {
    expect(diffValues({ approvers: ['a', 'b'] }, { approvers: ['a', 'c'] })).toEqual([{ path: 'approvers', from: ['a', 'b'], to: ['a', 'c'] }]);
    expect(diffValues(1, 2)).toEqual([{ path: '', from: 1, to: 2 }]);
  });

  it('treats contextSchema as one value (no walk into the schema)', () => {
    const from = { contextSchema: { type: 'object', properties: { a: { type: 'string' } } } };
    const to = { contextSchema: { type: 'object', properties: { a: { type: 'number' } } } };
    expect(diffValues(from, to)).toEqual([{ path: 'contextSchema', from: from.contextSchema, to: to.contextSchema }]);
  });

  it('reports a leaf that became an object as one change', () => {
    expect(diffValues({ route: null }, { route: { channels: ['email'] } })).toEqual([{ path: 'route', from: null, to: { channels: ['email'] } }]);
  });
});

describe('diffDefinitions and approverSet', () => {
  it('counts the assignee as an approver and lists approvers added and removed', () => {
    expect(approverSet({ defaults: { approvers: ['a@example.com'], assigneeEmail: 'lead@example.com' } }).sort()).toEqual([
      'a@example.com',
      'lead@example.com',
    ]);
    expect(approverSet({ defaults: { approvers: ['a@example.com'], assigneeEmail: 'a@example.com' } })).toEqual(['a@example.com']);
    const d = diffDefinitions(
      { defaults: { approvers: ['a@example.com', 'b@example.com'] } },
      { defaults: { approvers: ['b@example.com', 'c@example.com'] }, timeoutSec: 30 },
    );
    expect(d).toEqual({
      approvers: { added: ['c@example.com'], removed: ['a@example.com'] },
      changes: [
        { path: 'defaults.approvers', from: ['a@example.com', 'b@example.com'], to: ['b@example.com', 'c@example.com'] },
        { path: 'timeoutSec', to: 30 },
      ],
    });
  });

  it('treats a missing previous definition as empty', () => {
    expect(diffDefinitions(null, { defaults: { approvers: ['a@example.com'] } })).toEqual({
      approvers: { added: ['a@example.com'], removed: [] },
      changes: [{ path: 'defaults', to: { approvers: ['a@example.com'] } }],
    });
  });
});

describe('checkSatisfiable', () => {
  it('accepts a policy naming nobody and no quorum', () => {
    expect(checkSatisfiable({ defaults: {} }, [])).toEqual({ ok: true, problems: [], approversToVerify: [], disabled: [] });
  });

  it('treats unregistered emails as enabled approvers', () => {
    const s = checkSatisfiable({ defaults: { approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 2 } }, []);
    expect(s.ok).toBe(true);
    expect(s.problems).toEqual([]);
    expect(bare('a@example.com')).toEqual({
      email: 'a@example.com',
      approverId: null,
      registered: false,
      disabled: false,
      channels: [{ channel: 'email', endpoint: 'a@example.com', status: 'verified', verifiedAt: null }],
      methods: [{ surface: 'inbox', resolvedRef: null, status: 'verified', verifiedAt: null }],
    });
  });

  it('refuses a quorum larger than the enabled approvers, naming required and available', () => {
    const s = checkSatisfiable({ defaults: { approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 3 } }, []);
    expect(s.ok).toBe(false);
    expect(s.required).toBe(3);
    expect(s.available).toBe(2);
    expect(s.problems).toHaveLength(1);
    expect(s.problems[0]).toMatch(/approvalsRequired is 3 but only 2 enabled/);
  });

  it('refuses a quorum with nobody named', () => {
    const s = checkSatisfiable({ defaults: { approvalsRequired: 1 } }, []);
    expect(s).toMatchObject({ ok: false, required: 1, available: 0 });
  });

  it('refuses a rejection quorum that cannot be reached', () => {
    const s = checkSatisfiable({ defaults: { approvers: ['a@example.com'], approvalsRequired: 1, rejectionsRequired: 2 } }, []);
    expect(s).toMatchObject({ ok: false, required: 2, available: 1 });
    expect(s.problems[0]).toMatch(/rejectionsRequired is 2/);
  });

  it('does not count a disabled approver and reports it', () => {
    const approvers = [registered('a@example.com', { disabled: true }), registered('b@example.com')];
    const two = checkSatisfiable({ defaults: { approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 2 } }, approvers);
    expect(two).toMatchObject({ ok: false, required: 2, available: 1, disabled: ['a@example.com'] });
    expect(two.problems[0]).toMatch(/disabled: a@example\.com/);
    const one = checkSatisfiable({ defaults: { approvers: ['a@example.com', 'b@example.com'], approvalsRequired: 1 } }, approvers);
    expect(one).toEqual({ ok: true, problems: [], approversToVerify: [], disabled: ['a@example.com'] });
  });

  it('needs as many esign-verified approvers as the quorum for a signature policy', () => {
    const def = { defaults: { approvers: ['a@example.com', 'b@example.com', 'c@example.com'], approvalsRequired: 2 }, requiresSignature: true };
    const none = checkSatisfiable(def, [registered('a@example.com', { esign: 'pending' }), registered('b@example.com', { esign: 'failed' })]);
    expect(none).toMatchObject({ ok: false, required: 2, available: 0 });
    expect(none.approversToVerify).toEqual(['a@example.com', 'b@example.com', 'c@example.com']);
    expect(none.problems[0]).toMatch(/requiresSignature needs 2/);

    const one = checkSatisfiable(def, [registered('a@example.com', { esign: 'verified' }), registered('b@example.com', { esign: 'pending' })]);
    expect(one).toMatchObject({ ok: false, required: 2, available: 1, approversToVerify: ['b@example.com', 'c@example.com'] });

    const two = checkSatisfiable(def, [registered('a@example.com', { esign: 'verified' }), registered('b@example.com', { esign: 'verified' })]);
    expect(two).toEqual({ ok: true, problems: [], approversToVerify: [], disabled: [] });
  });

  it('does not count a disabled signer', () => {
    const def = { defaults: { approvers: ['a@example.com', 'b@example.com'] }, requiresSignature: true };
    const s = checkSatisfiable(def, [registered('a@example.com', { esign: 'verified', disabled: true }), registered('b@example.com')]);
    expect(s).toMatchObject({ ok: false, required: 1, available: 0, approversToVerify: ['b@example.com'], disabled: ['a@example.com'] });
  });

  it('uses the first problem for required/available when several apply', () => {
    const s = checkSatisfiable({ defaults: { approvers: ['a@example.com'], approvalsRequired: 2, rejectionsRequired: 3 }, requiresSignature: true }, []);
    expect(s.ok).toBe(false);
    expect(s.problems).toHaveLength(3);
    expect(s.required).toBe(2);
    expect(s.available).toBe(1);
  });
});
