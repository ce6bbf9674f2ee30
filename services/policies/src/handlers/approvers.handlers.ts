import { AccessEndpoints, AppError, ApproversEndpoints, DirectoryEndpoints, type Bus, type ServiceHost } from '@approvals/shared';
import { withStatus } from '@approvals/shared';
import { bare } from '../domain/definition';
import type { ApproversStore } from '../store/approvers.store';

const approverNotFound = () => new AppError('not_found', 'approver not found');

export function registerApproverHandlers(host: ServiceHost, deps: { approvers: ApproversStore; bus: Bus }): void {
  const { approvers } = deps;
  const E = ApproversEndpoints;
  host.handle(E.register, async (r) => {
    const { approver, created } = await approvers.register(r.org, r.body);
    return withStatus(created ? 201 : 200, { ...approver, created });
  });
  host.handle(E.list, async (r) => ({ approvers: await approvers.list(r.org) }));
  host.handle(E.get, async (r) => (await approvers.get(r.org, r.params.id)) ?? Promise.reject(approverNotFound()));
  host.handle(E.verify, async (r) => (await approvers.verify(r.org, r.params.id, r.body)) ?? Promise.reject(approverNotFound()));
  host.handle(E.disable, async (r) => (await approvers.setDisabled(r.org, r.params.id, true)) ?? Promise.reject(approverNotFound()));
  host.handle(E.enable, async (r) => (await approvers.setDisabled(r.org, r.params.id, false)) ?? Promise.reject(approverNotFound()));
  // The identity provider (through the surfaces service's verified webhook).
  host.handle(E.identityUpdated, async (r) => ({ updated: await approvers.applyIdentity(r.identityUserId, { email: r.email, name: r.name }) }));
  host.handle(E.identityDisabled, async (r) => {
    let disabled = 0;
    for (const a of await approvers.byIdentity(r.identityUserId, { org: r.org, email: r.org ? r.email : undefined })) {
      if (!a.disabled && (await approvers.setDisabled(a.org_id, a.id, true, 'identity'))) disabled++;
    }
    return { disabled };
  });
  // The surfaces service only (bus permissions): it has just proven the account is the person's.
  host.handle(E.linkChat, async (r) => (await approvers.linkChat(r)) ?? Promise.reject(new AppError('not_found', `no approver record for ${r.email} in this org: nothing to unlink`)));
  host.handle(E.lookup, async (r) => {
    const registered = new Map((await approvers.lookup(r.org, r.emails)).map((a) => [a.email, a]));
    return { approvers: r.emails.map((e) => registered.get(e) ?? bare(e)) };
  });

  // Directory: approver ids are ours; user and API key ids belong to the gateway's access schema.
  host.handle(DirectoryEndpoints.actor, async (r) => {
    const ref = r.query.ref;
    if (ref.startsWith('apr_')) {
      const a = await approvers.get(r.org, ref);
      if (!a) throw new AppError('not_found', `no actor ${ref}`);
      return { ref, kind: 'approver' as const, label: a.name ? `${a.name} <${a.email}>` : a.email, email: a.email };
    }
    const found = await deps.bus.call(AccessEndpoints.actorLabel, { org: r.org, ref });
    if (!found.found || !found.kind || !found.label) throw new AppError('not_found', `no actor ${ref}`);
    return { ref, kind: found.kind, label: found.label, ...(found.email ? { email: found.email } : {}) };
  });
}
