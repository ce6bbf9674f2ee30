import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApprovalsClient } from './client';
import { ApprovalsError } from './errors';
import type { FieldChange, PolicyBody, PolicyPreview } from './types';

export interface ApplyPoliciesOptions {
  /** Preview and print only; write nothing. */
  dryRun?: boolean;
  /** Where the plan and results go (default: stdout). */
  log?: (line: string) => void;
}

export interface ApplyPolicyOutcome {
  file: string;
  key?: string;
  /** created, updated (new version), relabelled (name/description only), restored, unchanged, refused. */
  action: 'create' | 'update' | 'relabel' | 'restore' | 'unchanged' | 'refused';
  preview?: PolicyPreview;
  /** Version after applying (absent in a dry run or when refused). */
  version?: number;
  error?: { code: string; message: string; status?: number };
}

export interface ApplyPoliciesResult {
  ok: boolean;
  applied: boolean;
  outcomes: ApplyPolicyOutcome[];
}

/**
 * Policy as code: every `*.json` file of `folder` is one policy body, as the upsert route
 * takes it. Each is previewed first and its diff printed; if any is refused (unreadable
 * file, duplicate key, or a preview the server refuses), nothing is written. Otherwise
 * each changed policy is upserted with `X-Policy-Source: repository` (unless dry run).
 * Unchanged policies are not written, so running it again adds no version.
 */
export async function applyPolicies(client: ApprovalsClient, folder: string, opts: ApplyPoliciesOptions = {}): Promise<ApplyPoliciesResult> {
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const files = (await readdir(folder, { withFileTypes: true }))
    .filter((e) => e.isFile() && e.name.toLowerCase().endsWith('.json'))
    .map((e) => e.name)
    .sort();
  if (files.length === 0) {
    log(`no policy files (*.json) in ${folder}`);
    return { ok: false, applied: false, outcomes: [] };
  }

  // 1. Read and preview everything.
  const planned: Array<{ outcome: ApplyPolicyOutcome; body?: PolicyBody }> = [];
  const fileOfKey = new Map<string, string>();
  for (const file of files) {
    const outcome: ApplyPolicyOutcome = { file, action: 'refused' };
    let body: PolicyBody | undefined;
    try {
      const parsed: unknown = JSON.parse(await readFile(join(folder, file), 'utf8'));
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the file must hold one JSON object (a policy body)');
      body = parsed as PolicyBody;
    } catch (err) {
      outcome.error = { code: 'invalid_file', message: (err as Error).message };
    }
    const key = body ? (typeof body.key === 'string' ? body.key : typeof body.name === 'string' ? body.name : undefined) : undefined;
    if (key !== undefined) outcome.key = key;
    if (body && key !== undefined && fileOfKey.has(key)) {
      outcome.error = { code: 'duplicate_key', message: `key "${key}" is also defined in ${fileOfKey.get(key)}` };
      body = undefined;
    }
    if (body && key !== undefined) fileOfKey.set(key, file);
    if (body) {
      try {
        const preview = await client.previewPolicy(body);
        outcome.preview = preview;
        outcome.key = preview.key;
        outcome.action = actionOf(preview);
      } catch (err) {
        if (!(err instanceof ApprovalsError)) throw err;
        outcome.error = { code: err.code, message: err.message, status: err.status };
        if (err.body && typeof err.body === 'object' && Array.isArray((err.body as { issues?: unknown }).issues)) {
          const issues = (err.body as { issues: Array<{ path?: string; message?: string }> }).issues;
          outcome.error.message += ` (${issues.map((i) => `${i.path ?? ''}: ${i.message ?? ''}`).join('; ')})`;
        }
        body = undefined;
      }
    }
    for (const line of describe(outcome)) log(line);
    planned.push(body ? { outcome, body } : { outcome });
  }

  const refused = planned.filter((p) => p.outcome.action === 'refused').length;
  if (refused > 0) {
    log(`${refused} of ${planned.length} ${plural(planned.length, 'policy', 'policies')} refused: nothing applied`);
    return { ok: false, applied: false, outcomes: planned.map((p) => p.outcome) };
  }
  if (opts.dryRun) {
    log(
      `dry run: ${summary(
        planned.map((p) => p.outcome),
        true,
      )}; nothing written`,
    );
    return { ok: true, applied: false, outcomes: planned.map((p) => p.outcome) };
  }

  // 2. Write what changed.
  let failed = 0;
  for (const p of planned) {
    const o = p.outcome;
    if (o.action === 'unchanged' || !p.body) {
      o.version = o.preview?.currentVersion ?? undefined;
      continue;
    }
    try {
      const saved = await client.upsertPolicy(p.body, { source: 'repository' });
      o.version = saved.version;
      log(`${o.key}: applied, now v${saved.version}`);
    } catch (err) {
      if (!(err instanceof ApprovalsError)) throw err;
      failed++;
      o.action = 'refused';
      o.error = { code: err.code, message: err.message, status: err.status };
      log(`${o.key}: refused: ${err.code}: ${err.message}`);
    }
  }
  log(
    summary(
      planned.map((p) => p.outcome),
      false,
    ),
  );
  return { ok: failed === 0, applied: true, outcomes: planned.map((p) => p.outcome) };
}

function actionOf(p: PolicyPreview): ApplyPolicyOutcome['action'] {
  if (p.noop) return 'unchanged';
  if (!p.exists && !p.archived) return 'create';
  if (p.archived) return 'restore';
  return p.nextVersion !== p.currentVersion ? 'update' : 'relabel';
}

function describe(o: ApplyPolicyOutcome): string[] {
  const head = `${o.key ?? '(no key)'} (${o.file})`;
  if (o.action === 'refused') {
    // The server could not be asked at all: not a refusal of the policy.
    if (o.error?.code === 'network_error' || o.error?.code === 'timeout') return [`${head}: could not reach the server (${o.error.code}): ${o.error.message}`];
    return [`${head}: refused: ${o.error?.code}: ${o.error?.message}`];
  }
  const p = o.preview!;
  const lines: string[] = [];
  switch (o.action) {
    case 'unchanged':
      return [`${head}: no change (v${p.currentVersion})`];
    case 'create':
      lines.push(`${head}: new policy, v${p.nextVersion}`);
      break;
    case 'restore':
      lines.push(`${head}: restore archived policy, v${p.currentVersion} → v${p.nextVersion}`);
      break;
    case 'update':
      lines.push(`${head}: v${p.currentVersion} → v${p.nextVersion}`);
      break;
    case 'relabel':
      lines.push(`${head}: labels only, stays v${p.currentVersion}`);
      break;
  }
  for (const a of p.diff.approvers.added) lines.push(`  + approver ${a}`);
  for (const r of p.diff.approvers.removed) lines.push(`  - approver ${r}`);
  for (const c of p.diff.changes) if (c.path !== 'defaults.approvers') lines.push(`  ${change(c)}`);
  for (const c of p.labels) lines.push(`  ${change(c)}`);
  return lines;
}

function change(c: FieldChange): string {
  return `${c.path}: ${show(c.from)} → ${show(c.to)}`;
}

function show(v: unknown): string {
  if (v === undefined) return '(unset)';
  const s = JSON.stringify(v);
  return s.length > 200 ? `${s.slice(0, 197)}...` : s;
}

function summary(outcomes: ApplyPolicyOutcome[], dry: boolean): string {
  const count = (a: ApplyPolicyOutcome['action']) => outcomes.filter((o) => o.action === a).length;
  const parts = [
    `${count('create')} ${dry ? 'to create' : 'created'}`,
    `${count('update')} ${dry ? 'to update' : 'updated'}`,
    `${count('restore')} ${dry ? 'to restore' : 'restored'}`,
    `${count('relabel')} ${dry ? 'to relabel' : 'relabelled'}`,
    `${count('unchanged')} unchanged`,
    `${count('refused')} refused`,
  ];
  return `${outcomes.length} ${plural(outcomes.length, 'policy', 'policies')}: ${parts.join(', ')}`;
}

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);
