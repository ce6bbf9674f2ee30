import { answerOf } from '../src/domain/decision';
import { describe, expect, it } from '@jest/globals';
import { AppError, ManualClock, type DecisionRequest, type ResolveAdhocReply, type ResolveReply } from '@approvals/shared';
import {
  answerableByLink,
  deadlineOf,
  isPastDeadline,
  linkAnswers,
  outcomeOf,
  pendingVoters,
  refusalOf,
  remindRecipients,
  voteRuling,
  voterRefusal,
} from '../src/domain/decision';
import { adhocGate, adhocPrecheck, policyGate } from '../src/domain/gate';

// Pure rules of the decisions service: no database, no bus; time comes from an injected clock.

const clock = new ManualClock(new Date('2026-11-24T10:00:00.000Z'));
const open = (over: Partial<Parameters<typeof voteRuling>[0]> = {}) => ({
  status: 'PENDING' as const,
  expiresAt: new Date(clock.now().getTime() + 60_000),
  requiresSignature: false,
  responseSpec: null,
  approvers: ['a@x.com'],
  ...over,
});
const ballot = (over: Partial<Parameters<typeof voteRuling>[1]> = {}) => ({
  voter: { kind: 'person' as const, email: 'a@x.com' },
  voterDisabled: false,
  surface: 'inbox',
  choice: 'approve' as const,
  votedBefore: false,
  ...over,
});

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof AppError ? err.code : 'not an AppError';
  }
}

describe('the deadline: past it means expired', () => {
  it('is past at and after expiresAt, only for a PENDING decision, never without a deadline', () => {
    const c = new ManualClock(new Date('2026-11-24T10:00:00.000Z'));
    const expiresAt = deadlineOf(c.now(), 30)!;
    expect(expiresAt.toISOString()).toBe('2026-11-24T10:00:30.000Z');
    expect(isPastDeadline({ status: 'PENDING', expiresAt }, c.now())).toBe(false);
    c.advance(29_999);
    expect(isPastDeadline({ status: 'PENDING', expiresAt }, c.now())).toBe(false);
    c.advance(1);
    expect(isPastDeadline({ status: 'PENDING', expiresAt }, c.now())).toBe(true);
    expect(isPastDeadline({ status: 'APPROVED', expiresAt }, c.now())).toBe(false);
    expect(isPastDeadline({ status: 'PENDING', expiresAt: null }, c.now())).toBe(false);
    expect(deadlineOf(c.now(), null)).toBeNull();
  });
});

describe('a vote', () => {
  it('is refused for an API key and for someone not among the approvers', () => {
    expect(voterRefusal(['a@x.com'], { kind: 'apiKey' })).toBe('API keys cannot vote');
    expect(voterRefusal(['a@x.com'], { kind: 'person', email: 'b@x.com' })).toBe('not an approver of this decision');
    expect(voterRefusal(['a@x.com'], { kind: 'person', email: 'a@x.com' })).toBeNull();
  });

  it('refuses first whoever may not vote: an API key, a non-approver, an approver disabled since', () => {
    expect(voteRuling(open(), ballot({ voter: { kind: 'apiKey' }, votedBefore: true }), clock.now())).toEqual({ kind: 'refused', why: 'API keys cannot vote' });
    expect(voteRuling(open(), ballot({ voter: { kind: 'person', email: 'b@x.com' } }), clock.now())).toEqual({
      kind: 'refused',
      why: 'not an approver of this decision',
    });
    expect(voteRuling(open({ status: 'APPROVED' }), ballot({ voterDisabled: true }), clock.now())).toEqual({ kind: 'refused', why: 'a disabled approver' });
  });

  it('answers already_voted first, even on a decision it resolved or that expired since', () => {
    const later = new Date(clock.now().getTime() + 3_600_000);
    expect(voteRuling(open({ status: 'APPROVED' }), ballot({ votedBefore: true }), clock.now())).toEqual({ kind: 'already_voted' });
    expect(voteRuling(open(), ballot({ votedBefore: true }), later)).toEqual({ kind: 'already_voted' });
  });

  it('past the deadline expires the decision instead of counting', () => {
    const d = open();
    expect(voteRuling(d, ballot(), new Date(d.expiresAt!.getTime()))).toEqual({ kind: 'expire' });
    expect(voteRuling(d, ballot(), new Date(d.expiresAt!.getTime() - 1))).toEqual({ kind: 'record' });
  });

  it('is closed once resolved, needs a signature where one decides, and a fitting responseValue', () => {
    expect(voteRuling(open({ status: 'REJECTED' }), ballot(), clock.now())).toEqual({ kind: 'not_pending', status: 'REJECTED' });
    expect(voteRuling(open({ requiresSignature: true }), ballot(), clock.now())).toEqual({ kind: 'signature_required' });
    expect(voteRuling(open({ requiresSignature: true }), ballot({ surface: 'esign' }), clock.now())).toEqual({ kind: 'record' });
    const text = open({ responseSpec: { type: 'text' } });
    expect(voteRuling(text, ballot(), clock.now())).toMatchObject({ kind: 'bad_value' });
    expect(voteRuling(text, ballot({ responseValue: 'ok' }), clock.now())).toEqual({ kind: 'record' });
    expect(voteRuling(text, ballot({ choice: 'reject' }), clock.now())).toEqual({ kind: 'record' });
  });

  it('under requireRejectNote, a reject without a reason (empty or blank) is note_required; an approve needs none', () => {
    const strict = { ...open(), requireRejectNote: true };
    expect(voteRuling(strict, ballot({ choice: 'reject' }), clock.now())).toEqual({ kind: 'note_required' });
    expect(voteRuling(strict, ballot({ choice: 'reject', note: '  ' }), clock.now())).toEqual({ kind: 'note_required' });
    expect(voteRuling(strict, ballot({ choice: 'reject', note: 'wrong service' }), clock.now())).toEqual({ kind: 'record' });
    expect(voteRuling(strict, ballot(), clock.now())).toEqual({ kind: 'record' });
    expect(voteRuling(open(), ballot({ choice: 'reject' }), clock.now())).toEqual({ kind: 'record' });
    // Who may vote and whether they did come first.
    expect(voteRuling(strict, ballot({ choice: 'reject', votedBefore: true }), clock.now())).toEqual({ kind: 'already_voted' });
  });

  it('resolves at the first threshold reached', () => {
    const t = { approvalsRequired: 2, rejectionsRequired: 1 };
    expect(outcomeOf({ ...t, approvals: 1, rejections: 0 })).toBeNull();
    expect(outcomeOf({ ...t, approvals: 2, rejections: 0 })).toBe('APPROVED');
    expect(outcomeOf({ ...t, approvals: 1, rejections: 1 })).toBe('REJECTED');
  });
});

describe('verify and consume', () => {
  const approved = {
    status: 'APPROVED' as const,
    approvers: [],
    approvalsRequired: 1,
    rejectionsRequired: 1,
    factsHash: 'h',
    requireFacts: false,
    workflowRef: 'wf',
    stepRef: 's',
    consumedBy: null,
  };
  it('compares only what the caller sends, and lets only the first consumer (and its retries) through', () => {
    expect(refusalOf(approved, {})).toBeNull();
    expect(refusalOf({ ...approved, status: 'PENDING' }, {})).toBe('not_approved');
    expect(refusalOf(approved, { factsHash: 'other' })).toBe('facts_mismatch');
    expect(refusalOf(approved, { workflowRef: 'other' })).toBe('workflow_mismatch');
    expect(refusalOf(approved, { stepRef: 'other' })).toBe('step_mismatch');
    expect(refusalOf({ ...approved, consumedBy: 'svc-a' }, { consumer: 'svc-a' })).toBeNull();
    expect(refusalOf({ ...approved, consumedBy: 'svc-a' }, { consumer: 'svc-b' })).toBe('consumed');
  });

  it('under requireFacts, an action that names no facts is never authorized, whatever the state', () => {
    const strict = { ...approved, requireFacts: true };
    expect(refusalOf(strict, {})).toBe('facts_required');
    expect(refusalOf(strict, { workflowRef: 'wf', stepRef: 's' })).toBe('facts_required');
    expect(refusalOf({ ...strict, status: 'PENDING' }, {})).toBe('facts_required');
    expect(refusalOf({ ...strict, consumedBy: 'svc-a' }, { consumer: 'svc-b' })).toBe('facts_required');
    expect(refusalOf(strict, { factsHash: 'h' })).toBeNull();
    expect(refusalOf(strict, { factsHash: 'other' })).toBe('facts_mismatch');
    expect(refusalOf({ ...strict, status: 'PENDING' }, { factsHash: 'h' })).toBe('not_approved');
  });
});

describe('answering by link', () => {
  const plain = { requiresSignature: false, responseSpec: null, proposedOutput: null };
  it('both answers for a yes/no decision; none where a signature decides', () => {
    expect(linkAnswers(plain)).toEqual(['approve', 'reject']);
    expect(answerableByLink(plain)).toBe(true);
    expect(linkAnswers({ ...plain, requiresSignature: true })).toEqual([]);
    expect(answerableByLink({ ...plain, requiresSignature: true })).toBe(false);
  });
  it('only a rejection when approving needs a typed answer or a draft is to be reviewed', () => {
    expect(linkAnswers({ ...plain, responseSpec: { type: 'text' } })).toEqual(['reject']);
    expect(linkAnswers({ ...plain, responseSpec: { type: 'select', options: [{ id: 'a', label: 'A' }] } })).toEqual(['reject']);
    expect(linkAnswers({ ...plain, responseSpec: { type: 'select', options: [{ id: 'a', label: 'A' }], min: 0 } })).toEqual(['approve', 'reject']);
    expect(linkAnswers({ ...plain, proposedOutput: { content: 'Dear customer' } })).toEqual(['reject']);
    expect(answerableByLink({ ...plain, proposedOutput: { content: 'x' } })).toBe(false);
  });
});

describe('reminders and escalations', () => {
  it('go to those still to answer; a reminder to the assignee when there is one', () => {
    const pending = pendingVoters(['a', 'b', 'c'], ['b']);
    expect(pending).toEqual(['a', 'c']);
    expect(remindRecipients(null, pending)).toEqual(['a', 'c']);
    expect(remindRecipients('c', pending)).toEqual(['c']);
  });
});

describe('the creation gate', () => {
  const policy = (over: Partial<ResolveReply> = {}, def: Partial<ResolveReply['definition']> = {}): ResolveReply => ({
    policyId: 'pol_1',
    key: 'deploy',
    name: 'Deploy',
    version: 3,
    versionId: 'pv_3',
    contentHash: 'h',
    definition: { defaults: { approvers: ['a@x.com', 'b@x.com'], approvalsRequired: 1 }, timeoutSec: 600, ...def },
    approvers: [
      { email: 'a@x.com', approverId: null, registered: false, disabled: false, channels: [], methods: [] },
      { email: 'b@x.com', approverId: 'apr_b', registered: true, disabled: true, channels: [], methods: [] },
    ],
    satisfiable: true,
    problems: [],
    pin: null,
    ...over,
  });
  const req = (over: Partial<DecisionRequest> = {}) => ({ externalRunId: 'run', stepRef: 's', engine: 'api', policy: 'deploy', ...over }) as DecisionRequest;

  it('fixes approvers (without the disabled), quorum, timeout and reason from the policy', () => {
    expect(policyGate(policy(), req())).toMatchObject({
      approvers: ['a@x.com'],
      approvalsRequired: 1,
      rejectionsRequired: 1,
      timeoutSec: 600,
      reason: 'created',
      requiresSignature: false,
    });
  });

  it('refuses, in order: owned fields, no approvers, an assignee who cannot answer, unsatisfiable, missing signature, a stale pin', () => {
    expect(codeOf(() => policyGate(policy(), req({ timeoutSec: 5 })))).toBe('field_owned_by_policy');
    expect(codeOf(() => policyGate(policy({ approvers: [] }), req()))).toBe('approver_required');
    expect(codeOf(() => policyGate(policy(), req({ assigneeEmail: 'b@x.com' })))).toBe('field_owned_by_policy');
    expect(codeOf(() => policyGate(policy({ satisfiable: false, problems: ['p'] }), req()))).toBe('unsatisfiable_policy');
    expect(codeOf(() => policyGate(policy({}, { requiresSignature: true }), req()))).toBe('artifact_required');
    expect(codeOf(() => policyGate(policy({ pin: { requested: 2, current: 3, matches: false } }), req()))).toBe('policy_version_mismatch');
    expect(codeOf(() => policyGate(policy({ pin: { requested: 3, current: 3, matches: true } }), req()))).toBeUndefined();
    // Order: an unsatisfiable policy is reported before the stale pin.
    expect(codeOf(() => policyGate(policy({ satisfiable: false, problems: ['p'], pin: { requested: 2, current: 3, matches: false } }), req()))).toBe(
      'unsatisfiable_policy',
    );
  });

  it('required: false opens nothing unless a floor rule matches', () => {
    expect(policyGate(policy(), req({ required: false }))).toBe('not_required');
    const floored = policy({}, { floor: [{ field: 'amount', op: 'gt', value: 100 }] });
    expect(policyGate(floored, req({ required: false, context: { data: { amount: 500 } } } as never))).toMatchObject({ reason: 'floor' });
    expect(policyGate(floored, req({ required: false, context: { data: { amount: 5 } } } as never))).toBe('not_required');
  });

  it('ad hoc: on policies answer about the named set', () => {
    const ok: ResolveAdhocReply = { approvers: ['a@x.com'], disabled: ['b@x.com'], satisfiable: true, problems: [] };
    const b = req({ policy: undefined, approvers: ['a@x.com', 'b@x.com'] });
    expect(codeOf(() => adhocPrecheck(req({ policy: undefined, policyVersion: 2, approvers: ['a@x.com'] })))).toBe('invalid_request');
    expect(codeOf(() => adhocPrecheck(req({ policy: undefined })))).toBe('approver_required');
    expect(adhocGate(b, ok)).toMatchObject({ approvers: ['a@x.com'], policy: null, requiresSignature: false });
    expect(codeOf(() => adhocGate({ ...b, assigneeEmail: 'b@x.com' }, ok))).toBe('approver_required');
    expect(codeOf(() => adhocGate(b, { ...ok, approvers: [] }))).toBe('approver_required');
    expect(codeOf(() => adhocGate(b, { ...ok, satisfiable: false, problems: ['x'], field: 'approvalsRequired', required: 2, available: 1 }))).toBe(
      'unsatisfiable_policy',
    );
    expect(adhocGate({ ...b, required: false }, ok)).toBe('not_required');
  });
});

describe('answerOf: can this person answer now', () => {
  const now = new Date('2026-11-28T00:00:00.000Z');
  const d = { status: 'PENDING' as const, expiresAt: null as Date | null, approvers: ['ann@x.com'], requiresSignature: false };
  const ann = { email: 'ann@x.com', votedBefore: false };
  it('an approver of a pending decision may approve or reject', () => {
    expect(answerOf(d, ann, now)).toEqual({ canAnswer: true, reason: null, answers: ['approve', 'reject'] });
  });
  it('says why not, in voteRuling order: not an approver, voted, closed (or past its deadline), signature only', () => {
    expect(answerOf(d, { email: 'eve@x.com', votedBefore: false }, now).reason).toBe('not_approver');
    expect(answerOf(d, null, now).reason).toBe('not_approver');
    expect(answerOf({ ...d, status: 'APPROVED' }, { ...ann, votedBefore: true }, now).reason).toBe('already_voted');
    expect(answerOf({ ...d, status: 'CANCELLED' }, ann, now).reason).toBe('not_pending');
    expect(answerOf({ ...d, expiresAt: new Date(now.getTime() - 1) }, ann, now)).toEqual({ canAnswer: false, reason: 'not_pending', answers: [] });
    expect(answerOf({ ...d, requiresSignature: true }, ann, now).reason).toBe('signature_required');
  });
});
