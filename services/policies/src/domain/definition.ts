import { canonicalize, sha256Hex, type PolicyDefinition, type PolicyUpsertBody, type ResolvedApprover } from '@approvals/shared';

type Input = Pick<PolicyUpsertBody, 'defaults' | 'timeoutSec' | 'contextSchema' | 'requiresSignature' | 'requireFacts' | 'requireRejectNote' | 'floor'>;

/**
 * Request body → the versioned content. Legacy `defaults.surface`: `esign` turns into
 * requiresSignature: true, any other value is dropped; approvers are de-duplicated
 * (case-insensitively, already lowercased by the schema). Absent stays absent, so the
 * same body always hashes the same.
 */
export function normalizeDefinition(input: Input): PolicyDefinition {
  const { surface, approvers, ...defaults } = input.defaults ?? {};
  const def: PolicyDefinition = { defaults: { ...defaults } };
  if (approvers !== undefined) def.defaults.approvers = [...new Set(approvers)];
  if (input.timeoutSec !== undefined && input.timeoutSec !== null) def.timeoutSec = input.timeoutSec;
  if (input.contextSchema !== undefined && input.contextSchema !== null) def.contextSchema = input.contextSchema;
  const requiresSignature = input.requiresSignature === true || surface === 'esign';
  if (requiresSignature) def.requiresSignature = true;
  // Like requiresSignature, only `true` is kept: a policy without it hashes as it did before the option existed.
  if (input.requireFacts === true) def.requireFacts = true;
  if (input.requireRejectNote === true) def.requireRejectNote = true;
  if (input.floor !== undefined && input.floor !== null && input.floor.length > 0) def.floor = input.floor;
  return def;
}

export function contentHash(def: PolicyDefinition): string {
  return sha256Hex(canonicalize(def));
}

/** Everyone who may answer under this definition: defaults.approvers plus defaults.assigneeEmail. */
export function approverSet(def: PolicyDefinition): string[] {
  const set = new Set(def.defaults.approvers ?? []);
  if (def.defaults.assigneeEmail) set.add(def.defaults.assigneeEmail);
  return [...set];
}

export interface FieldChange {
  path: string;
  from?: unknown;
  to?: unknown;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Field-level differences; objects are walked, arrays and scalars compared whole. */
export function diffValues(a: unknown, b: unknown, path = ''): FieldChange[] {
  if (canonicalize(a ?? null) === canonicalize(b ?? null)) return [];
  if (isPlainObject(a) && isPlainObject(b) && path !== 'contextSchema') {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => diffValues(a[k], b[k], path ? `${path}.${k}` : k));
  }
  const change: FieldChange = { path };
  if (a !== undefined) change.from = a;
  if (b !== undefined) change.to = b;
  return [change];
}

export function diffDefinitions(from: PolicyDefinition | null, to: PolicyDefinition) {
  const before = from ? approverSet(from) : [];
  const after = approverSet(to);
  return {
    approvers: {
      added: after.filter((e) => !before.includes(e)),
      removed: before.filter((e) => !after.includes(e)),
    },
    changes: diffValues(from ?? {}, to),
  };
}

export interface Satisfiability {
  ok: boolean;
  problems: string[];
  /** For a 422: what is required and what is available. */
  required?: number;
  available?: number;
  /** Approvers that still need to verify a method (signature) for the policy to be satisfiable. */
  approversToVerify: string[];
  disabled: string[];
  /** Which quorum field cannot be met, when one cannot. */
  field?: 'approvalsRequired' | 'rejectionsRequired';
}

/**
 * Can a decision under this definition ever resolve? Approvals need `approvalsRequired`
 * enabled approvers (registered-and-disabled ones do not count; bare emails do); a
 * rejection needs `rejectionsRequired`; a signature policy needs that many approvers
 * with a verified esign method. A policy naming nobody and no quorum is satisfiable: it
 * is refused per decision with approver_required instead.
 */
export function checkSatisfiable(def: PolicyDefinition, approvers: ResolvedApprover[]): Satisfiability {
  const names = approverSet(def);
  const byEmail = new Map(approvers.map((a) => [a.email, a]));
  const resolved = names.map((e) => byEmail.get(e) ?? bare(e));
  const enabled = resolved.filter((a) => !a.disabled);
  const disabled = resolved.filter((a) => a.disabled).map((a) => a.email);
  const problems: string[] = [];
  const out: Satisfiability = { ok: true, problems, approversToVerify: [], disabled };
  if (names.length === 0 && def.defaults.approvalsRequired === undefined && def.defaults.rejectionsRequired === undefined && !def.requiresSignature) {
    return out;
  }
  const approvals = def.defaults.approvalsRequired ?? 1;
  const rejections = def.defaults.rejectionsRequired ?? 1;
  if (approvals > enabled.length) {
    problems.push(
      `approvalsRequired is ${approvals} but only ${enabled.length} enabled approver(s) are named${disabled.length ? ` (disabled: ${disabled.join(', ')})` : ''}`,
    );
    out.required = approvals;
    out.available = enabled.length;
    out.field = 'approvalsRequired';
  }
  if (rejections > enabled.length) {
    problems.push(`rejectionsRequired is ${rejections} but only ${enabled.length} enabled approver(s) are named`);
    out.required ??= rejections;
    out.available ??= enabled.length;
    out.field ??= 'rejectionsRequired';
  }
  if (def.requiresSignature) {
    const signers = enabled.filter((a) => a.methods.some((m) => m.surface === 'esign' && m.status === 'verified'));
    if (signers.length < approvals) {
      problems.push(`requiresSignature needs ${approvals} approver(s) with a verified esign method; ${signers.length} have one`);
      out.required ??= approvals;
      out.available ??= signers.length;
      out.approversToVerify = enabled.filter((a) => !signers.includes(a)).map((a) => a.email);
    }
  }
  out.ok = problems.length === 0;
  return out;
}

/** A bare email never registered: an approver verified for email and inbox. */
export function bare(email: string): ResolvedApprover {
  return {
    email,
    approverId: null,
    registered: false,
    disabled: false,
    channels: [{ channel: 'email', endpoint: email, status: 'verified', verifiedAt: null }],
    methods: [{ surface: 'inbox', resolvedRef: null, status: 'verified', verifiedAt: null }],
  };
}

/** A version pin checked against the current version; null when none was asked for. */
export function pinOf(requested: number | undefined, current: number): { requested: number; current: number; matches: boolean } | null {
  return requested === undefined ? null : { requested, current, matches: requested === current };
}

/** An ad-hoc decision's approvers and quorum, as the definition the satisfiability rule reads. */
export function adhocDefinition(req: { approvers: string[]; approvalsRequired: number; rejectionsRequired: number }): PolicyDefinition {
  return { defaults: { approvers: req.approvers, approvalsRequired: req.approvalsRequired, rejectionsRequired: req.rejectionsRequired } } as PolicyDefinition;
}
