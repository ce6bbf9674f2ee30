import {
  AppError,
  DecisionsEndpoints,
  EVENT,
  POLICY_USAGE_MAX,
  actorLabelOf,
  actorOf,
  type Bus,
  type ContractEngine,
  type Clock,
  type PolicyDefinition,
  type PolicyUpdateBody,
  type PolicyUpsertBody,
  type PolicyView,
  type Principal,
  type ResolvedApprover,
} from '@approvals/shared';
import { adhocDefinition, approverSet, bare, checkSatisfiable, contentHash, diffDefinitions, diffValues, normalizeDefinition, pinOf, type Satisfiability } from '../domain/definition';
import type { ApproversStore } from '../store/approvers.store';
import type { OrgSettingsStore } from '../store/org-settings.store';
import { refuseOutsideDomains } from '../domain/approver-domains';
import type { PoliciesStore, PolicyRow, VersionRow } from '../store/policies.store';

const USE_WINDOW_MS = 30 * 24 * 3600 * 1000;
/** Merge-and-save rounds a PUT gets when concurrent writes keep moving the policy on. */
const UPDATE_ATTEMPTS = 50;

export interface PolicyDeps {
  /** Compiles and screens contextSchemas off the main thread, under time and memory limits. */
  contracts: ContractEngine;
  policies: PoliciesStore;
  approvers: ApproversStore;
  /** The org's approver settings: the domains approvers may come from. */
  orgSettings: OrgSettingsStore;
  clock: Clock;
  /** Pending decisions and last use per policy, from the decisions service (`policyUsageOver`). */
  usage: PolicyUsageOf;
}

export type PolicyUsage = { pending: number; lastUsedAt: Date | null };
export type PolicyUsageOf = (org: string, policyIds: string[]) => Promise<Map<string, PolicyUsage>>;

/**
 * Usage asked of the decisions service, which owns the decisions (`svc.decisions.policy_usage`),
 * at most `POLICY_USAGE_MAX` policies a request. Unreachable, it fails the read with 503: a
 * policy is never archived on a guess.
 */
export function policyUsageOver(bus: Bus): PolicyUsageOf {
  return async (org, policyIds) => {
    const out = new Map<string, PolicyUsage>();
    for (let i = 0; i < policyIds.length; i += POLICY_USAGE_MAX) {
      const { usage } = await bus.call(DecisionsEndpoints.policyUsage, { org, policyIds: policyIds.slice(i, i + POLICY_USAGE_MAX) });
      for (const u of usage) out.set(u.policyId, { pending: u.pending, lastUsedAt: u.lastUsedAt === null ? null : new Date(u.lastUsedAt) });
    }
    return out;
  };
}

const unknownPolicy = (key: string) => new AppError('unknown_policy', `policy "${key}" does not exist or is archived`, { policy: key });
/** A policy may be saved naming nobody (a draft), but no decision can open under it. */
const NO_APPROVERS = 'the policy names no approvers: decisions under it are refused with approver_required';
const notFound = (key: string) => new AppError('not_found', `policy "${key}" not found`);

export function createPolicyLogic(deps: PolicyDeps) {
  const { policies, approvers } = deps;

  async function resolveApprovers(org: string, def: PolicyDefinition): Promise<ResolvedApprover[]> {
    const emails = approverSet(def);
    const registered = new Map((await approvers.lookup(org, emails)).map((a) => [a.email, a]));
    return emails.map((e) => registered.get(e) ?? bare(e));
  }

  async function validateContextSchema(org: string, def: PolicyDefinition): Promise<void> {
    if (!def.contextSchema) return;
    const verdict = await deps.contracts.validate(org, def.contextSchema);
    if (!verdict.problem) return;
    if (verdict.tooExpensive) {
      throw new AppError('invalid_policy', `body.contextSchema: ${verdict.problem}`, { issues: [{ path: 'body.contextSchema', message: verdict.problem }] });
    }
    throw new AppError('invalid_request', `body.contextSchema: not a valid JSON Schema (draft 2020-12): ${verdict.problem}`, {
      issues: [{ path: 'body.contextSchema', message: verdict.problem }],
    });
  }

  /**
   * A contract saved before today's checks (an unsafe pattern, a self-reference) can no
   * longer be used: every decision under it is refused, so reads and check say so.
   */
  async function contextSchemaProblem(org: string, def: PolicyDefinition): Promise<string | null> {
    if (!def.contextSchema) return null;
    const verdict = await deps.contracts.validate(org, def.contextSchema, { reading: true });
    return verdict.problem ? `the contextSchema is not usable, so every decision under this policy is refused: ${verdict.problem}` : null;
  }

  function unsatisfiable(key: string, s: Satisfiability): AppError {
    return new AppError('unsatisfiable_policy', `policy "${key}" cannot be satisfied: ${s.problems.join('; ')}`, {
      policy: key,
      required: s.required,
      available: s.available,
      problems: s.problems,
      approversToVerify: s.approversToVerify,
      disabledApprovers: s.disabled,
    });
  }

  /** Refuses approvers outside the org's allowed domains (422 approver_domain_not_allowed). */
  async function checkDomains(org: string, emails: string[]): Promise<void> {
    const allowed = (await deps.orgSettings.get(org))?.allowed_approver_domains ?? [];
    refuseOutsideDomains(emails, allowed);
  }

  /** Everything a save would refuse, refused before anything is written. */
  async function validateForSave(org: string, key: string, def: PolicyDefinition): Promise<void> {
    await checkDomains(org, approverSet(def));
    await validateContextSchema(org, def);
    const s = checkSatisfiable(def, await resolveApprovers(org, def));
    if (!s.ok) throw unsatisfiable(key, s);
  }

  async function view(policy: PolicyRow, version: VersionRow, usage?: { pending: number; lastUsedAt: Date | null }): Promise<PolicyView> {
    const def = version.definition;
    const resolved = await resolveApprovers(policy.org_id, def);
    const s = checkSatisfiable(def, resolved);
    const warnings = s.disabled.map((email) => ({ code: 'approver_disabled', approver: email, message: `approver ${email} is disabled` }));
    if (!s.ok) warnings.push({ code: 'unsatisfiable', approver: undefined as never, message: s.problems.join('; ') });
    if (approverSet(def).length === 0) warnings.push({ code: 'no_approvers', approver: undefined as never, message: NO_APPROVERS });
    const schemaProblem = await contextSchemaProblem(policy.org_id, def);
    if (schemaProblem) warnings.push({ code: 'invalid_context_schema', approver: undefined as never, message: schemaProblem });
    const v: PolicyView = {
      id: policy.id,
      key: policy.key,
      name: policy.name,
      description: policy.description,
      defaults: def.defaults,
      timeoutSec: def.timeoutSec ?? null,
      contextSchema: def.contextSchema ?? null,
      requiresSignature: def.requiresSignature === true,
      floor: def.floor ?? null,
      version: version.number,
      versionId: version.id,
      contentHash: version.content_hash,
      createdAt: policy.created_at.toISOString(),
      updatedAt: policy.updated_at.toISOString(),
      warnings: warnings.map((w) => (w.approver === undefined ? { code: w.code, message: w.message } : w)),
    };
    if (usage) v.usage = { pending: usage.pending, lastUsedAt: usage.lastUsedAt ? usage.lastUsedAt.toISOString() : null };
    return v;
  }

  function versionView(key: string, v: VersionRow) {
    return {
      id: v.id,
      policyKey: key,
      number: v.number,
      definition: v.definition,
      contentHash: v.content_hash,
      changedBy: v.changed_by,
      source: v.source,
      createdAt: v.created_at.toISOString(),
    };
  }

  function sourceOf(principal: Principal, source?: 'dashboard' | 'api' | 'repository') {
    return source ?? (principal.kind === 'user' ? 'dashboard' : 'api');
  }

  async function save(
    args: {
      org: string;
      principal: Principal;
      source?: 'dashboard' | 'api' | 'repository';
      key: string;
      name?: string;
      description?: string | null;
      def: PolicyDefinition;
      expectedVersion?: number;
    },
    mode: 'upsert' | 'update',
  ) {
    // Saving what is already there (a redeploy, a rename) is always safe, even when an
    // approver has since been disabled: only a change of content is checked. The policy
    // keeps reporting the problem in `warnings` and `check`.
    const current = await policies.current(args.org, args.key);
    const unchanged = current !== undefined && current.version.content_hash === contentHash(args.def);
    if (!unchanged) await validateForSave(args.org, args.key, args.def);
    const result = await policies.save(
      {
        org: args.org,
        key: args.key,
        name: args.name,
        description: args.description,
        definition: args.def,
        hash: contentHash(args.def),
        actor: actorOf(args.principal),
        actorLabel: actorLabelOf(args.principal),
        source: sourceOf(args.principal, args.source),
        expectedVersion: args.expectedVersion,
      },
      mode,
    );
    if (result === 'stale') return 'stale' as const;
    if (!result) throw notFound(args.key);
    const noop = !result.created && !result.restored && !result.versionAdded && !result.labelsChanged;
    return {
      status: result.created || result.restored ? 201 : 200,
      body: { ...(await view(result.policy, result.version)), created: result.created, restored: result.restored, noop },
    };
  }

  async function requireCurrent(org: string, key: string) {
    const cur = await policies.current(org, key);
    if (!cur) throw notFound(key);
    return cur;
  }

  return {
    resolveApprovers,
    view,
    checkDomains,

    async upsert(req: { org: string; principal: Principal; source?: 'dashboard' | 'api' | 'repository'; body: PolicyUpsertBody }) {
      const b = req.body;
      const out = await save({ ...req, key: b.key, name: b.name, description: b.description ?? null, def: normalizeDefinition(b) }, 'upsert');
      if (out === 'stale') throw new AppError('internal', 'upsert cannot be stale');
      return out;
    },

    /**
     * PUT keeps the fields it is not given, so it merges into the current definition.
     * The merge is checked against the version it read: a concurrent change in between
     * makes the save answer 'stale' and the merge is redone on the newer version, so no
     * concurrent PUT loses another's change.
     */
    async update(req: { org: string; principal: Principal; source?: 'dashboard' | 'api' | 'repository'; key: string; body: PolicyUpdateBody }) {
      const b = req.body;
      for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
        const { policy, version } = await requireCurrent(req.org, req.key);
        const cur = version.definition;
        const def = normalizeDefinition({
          defaults: b.defaults ?? cur.defaults,
          timeoutSec: b.timeoutSec !== undefined ? b.timeoutSec : cur.timeoutSec,
          contextSchema: b.contextSchema !== undefined ? b.contextSchema : cur.contextSchema,
          requiresSignature: b.requiresSignature !== undefined ? b.requiresSignature : cur.requiresSignature,
          floor: b.floor !== undefined ? b.floor : (cur.floor as never),
        });
        const out = await save({ ...req, name: b.name, description: b.description, def, expectedVersion: policy.current_version }, 'update');
        if (out !== 'stale') return out;
      }
      throw new AppError('conflict', `policy "${req.key}" kept changing while this update was applied; retry`, { policy: req.key });
    },

    async preview(req: { org: string; body: PolicyUpsertBody }) {
      const b = req.body;
      const def = normalizeDefinition(b);
      const existing = await policies.find(req.org, b.key, { includeArchived: true });
      const current = existing ? await policies.version(existing.id, existing.current_version) : undefined;
      const changed = !current || current.content_hash !== contentHash(def);
      // Refused for the same reasons a save is: an unchanged, live policy always saves.
      if (changed || !existing || existing.archived_at) await validateForSave(req.org, b.key, def);
      const labels = diffValues(
        existing ? { name: existing.name, description: existing.description } : {},
        { name: b.name, description: b.description ?? null },
      );
      const live = Boolean(existing && !existing.archived_at);
      return {
        preview: {
          key: b.key,
          exists: live,
          archived: Boolean(existing?.archived_at),
          currentVersion: existing ? existing.current_version : null,
          nextVersion: !existing ? 1 : changed ? existing.current_version + 1 : existing.current_version,
          noop: live && !changed && labels.length === 0,
          diff: diffDefinitions(current?.definition ?? null, def),
          labels,
        },
      };
    },

    async get(org: string, key: string) {
      const { policy, version } = await requireCurrent(org, key);
      const usage = (await deps.usage(org, [policy.id])).get(policy.id) ?? { pending: 0, lastUsedAt: null };
      return view(policy, version, usage);
    },

    async list(org: string, principal: Principal) {
      const rows = await policies.list(org);
      if (principal.kind === 'apiKey') {
        return { policies: rows.map(({ policy }) => ({ key: policy.key, name: policy.name, description: policy.description })) };
      }
      const usage = await deps.usage(org, rows.map((r) => r.policy.id));
      return {
        policies: await Promise.all(rows.map(({ policy, version }) => view(policy, version, usage.get(policy.id) ?? { pending: 0, lastUsedAt: null }))),
      };
    },

    async remove(req: { org: string; principal: Principal; key: string; force: boolean }) {
      const policy = await policies.find(req.org, req.key);
      if (!policy) throw notFound(req.key);
      if (req.force && !(req.principal.kind === 'user' && req.principal.role === 'admin')) {
        throw new AppError('forbidden', 'force=true needs the admin role');
      }
      const usage = (await deps.usage(req.org, [policy.id])).get(policy.id) ?? { pending: 0, lastUsedAt: null };
      const recentlyUsed = usage.lastUsedAt !== null && deps.clock.now().getTime() - usage.lastUsedAt.getTime() < USE_WINDOW_MS;
      if (!req.force && (usage.pending > 0 || recentlyUsed)) {
        throw new AppError(
          'policy_in_use',
          usage.pending > 0
            ? `policy "${req.key}" has ${usage.pending} pending decision(s); pass force=true to archive anyway`
            : `policy "${req.key}" was used in the last 30 days; pass force=true to archive anyway`,
          { policy: req.key, pending: usage.pending, lastUsedAt: usage.lastUsedAt?.toISOString() ?? null },
        );
      }
      const current = await policies.version(policy.id, policy.current_version);
      const archived = await policies.archive(
        policy.id,
        req.force
          ? [
              {
                subject: EVENT.policyForceDeleted,
                org: req.org,
                data: { key: req.key, policyId: policy.id, actor: actorOf(req.principal), actorLabel: actorLabelOf(req.principal), pending: usage.pending, lastUsedAt: usage.lastUsedAt?.toISOString() ?? null },
              },
            ]
          : [
              {
                subject: EVENT.policyChanged,
                org: req.org,
                data: {
                  key: req.key,
                  policyId: policy.id,
                  change: 'archived',
                  actor: actorOf(req.principal),
                  actorLabel: actorLabelOf(req.principal),
                  source: sourceOf(req.principal),
                  before: current ? { version: current.number, versionId: current.id, contentHash: current.content_hash } : null,
                  after: null,
                },
              },
            ],
      );
      if (!archived) throw notFound(req.key);
      return { key: req.key, archived: true as const, archivedAt: archived.archived_at!.toISOString(), forced: req.force };
    },

    async versions(org: string, key: string) {
      const { policy } = await requireCurrent(org, key);
      return { key, versions: (await policies.versions(policy.id)).map((v) => versionView(key, v)) };
    },

    async version(org: string, key: string, n: number) {
      const { policy } = await requireCurrent(org, key);
      const v = await policies.version(policy.id, n);
      if (!v) throw new AppError('not_found', `policy "${key}" has no version ${n}`);
      return versionView(key, v);
    },

    async compare(org: string, key: string, from: number, to: number) {
      const { policy } = await requireCurrent(org, key);
      const [a, b] = await Promise.all([policies.version(policy.id, from), policies.version(policy.id, to)]);
      if (!a) throw new AppError('not_found', `policy "${key}" has no version ${from}`);
      if (!b) throw new AppError('not_found', `policy "${key}" has no version ${to}`);
      return { key, from, to, fromHash: a.content_hash, toHash: b.content_hash, diff: diffDefinitions(a.definition, b.definition) };
    },

    async check(org: string, keys: string[]) {
      const results = await Promise.all(
        [...new Set(keys)].map(async (key) => {
          const cur = await policies.current(org, key);
          if (!cur) return { key, status: 'missing' as const, reason: `policy "${key}" does not exist or is archived` };
          const s = checkSatisfiable(cur.version.definition, await resolveApprovers(org, cur.version.definition));
          if (s.ok && approverSet(cur.version.definition).length === 0) return { key, status: 'unsatisfiable' as const, reason: NO_APPROVERS, approversToVerify: [] };
          const schemaProblem = await contextSchemaProblem(org, cur.version.definition);
          if (s.ok && schemaProblem) return { key, status: 'unsatisfiable' as const, reason: schemaProblem, approversToVerify: [] };
          if (s.ok) return { key, status: 'ok' as const };
          return { key, status: 'unsatisfiable' as const, reason: s.problems.join('; '), approversToVerify: s.approversToVerify };
        }),
      );
      return { ok: results.every((r) => r.status === 'ok'), results };
    },

    async resolve(org: string, key: string, pinned?: number) {
      const cur = await policies.current(org, key);
      if (!cur) throw unknownPolicy(key);
      // A policy saved before the org narrowed its domains opens nothing outside them.
      await checkDomains(org, approverSet(cur.version.definition));
      const resolved = await resolveApprovers(org, cur.version.definition);
      const s = checkSatisfiable(cur.version.definition, resolved);
      return {
        policyId: cur.policy.id,
        key,
        name: cur.policy.name,
        version: cur.version.number,
        versionId: cur.version.id,
        contentHash: cur.version.content_hash,
        definition: cur.version.definition,
        approvers: resolved,
        satisfiable: s.ok,
        problems: s.problems,
        pin: pinOf(pinned, cur.version.number),
      };
    },

    /** The satisfiability of an ad-hoc approver set and quorum: the policy rule, on a definition made of them. */
    async resolveAdhoc(org: string, req: { approvers: string[]; approvalsRequired: number; rejectionsRequired: number }) {
      await checkDomains(org, req.approvers);
      const def = adhocDefinition(req);
      const s = checkSatisfiable(def, await resolveApprovers(org, def));
      return {
        approvers: req.approvers.filter((e) => !s.disabled.includes(e)),
        disabled: s.disabled,
        satisfiable: s.ok,
        problems: s.problems,
        ...(s.field ? { field: s.field, required: s.required, available: s.available } : {}),
      };
    },
  };
}
export type PolicyLogic = ReturnType<typeof createPolicyLogic>;

