import { AppError } from '@approvals/shared';

/**
 * The addresses among `emails` whose domain is not one of `allowed` (empty: any is). The
 * domain is what follows the last `@`, compared whole and in lower case: `example.com`
 * allows `a@example.com`, not `a@eu.example.com` nor `a@example.com.evil.test`.
 */
export function outsideDomains(emails: readonly string[], allowed: readonly string[]): string[] {
  if (allowed.length === 0) return [];
  const ok = new Set(allowed.map((d) => d.toLowerCase()));
  return [...new Set(emails)].filter((e) => !ok.has(e.slice(e.lastIndexOf('@') + 1).toLowerCase()));
}

/** 422 `approver_domain_not_allowed` naming who is outside, or nothing. */
export function refuseOutsideDomains(emails: readonly string[], allowed: readonly string[]): void {
  const outside = outsideDomains(emails, allowed);
  if (outside.length === 0) return;
  throw new AppError(
    'approver_domain_not_allowed',
    `${outside.join(', ')} ${outside.length === 1 ? 'is' : 'are'} not in the org's allowed approver domains (${allowed.join(', ')}): an admin sets them at PUT /v1/settings/approvers`,
    { approvers: outside, allowedApproverDomains: [...allowed] },
  );
}
