import {
  AccessEndpoints,
  AppError,
  ApproverSettingsEndpoints,
  ApproversEndpoints,
  DirectoryEndpoints,
  actorLabelOf,
  actorOf,
  type Bus,
  type Principal,
  type ServiceHost,
} from '@approvals/shared';
import { withStatus } from '@approvals/shared';
import { bare } from '../domain/definition';
import type { ApproverActor, ApproversStore } from '../store/approvers.store';
import type { OrgSettingsRow, OrgSettingsStore } from '../store/org-settings.store';

const approverNotFound = () => new AppError('not_found', 'approver not found');

/** The person or key acting, as the approver events name them. */
const actorFrom = (p: Principal): ApproverActor => ({ id: actorOf(p), label: actorLabelOf(p), ...(p.kind === 'user' ? { email: p.email } : {}) });
/** The identity provider acting (its verified webhook). */
const IDENTITY: ApproverActor = { id: null, label: 'identity provider' };

const settingsView = (row?: OrgSettingsRow) => ({
  allowedApproverDomains: row?.allowed_approver_domains ?? [],
  updatedAt: row ? row.updated_at.toISOString() : null,
});

export function registerApproverHandlers(
  host: ServiceHost,
  deps: { approvers: ApproversStore; orgSettings: OrgSettingsStore; checkDomains: (org: string, emails: string[]) => Promise<void>; bus: Bus },
): void {
  const { approvers } = deps;
  const E = ApproversEndpoints;
  host.handle(E.register, async (r) => {
    await deps.checkDomains(r.org, [r.body.email]);
    const { approver, created } = await approvers.register(r.org, r.body, actorFrom(r.principal));
    return withStatus(created ? 201 : 200, { ...approver, created });
  });
  host.handle(E.list, async (r) => ({ approvers: await approvers.list(r.org) }));
  host.handle(E.orgsOf, async (r) => ({ orgs: await approvers.orgsOf(r.email) }));
  host.handle(E.get, async (r) => (await approvers.get(r.org, r.params.id)) ?? Promise.reject(approverNotFound()));
  host.handle(E.verify, async (r) => (await approvers.verify(r.org, r.params.id, r.body, actorFrom(r.principal))) ?? Promise.reject(approverNotFound()));
  host.handle(E.disable, async (r) => (await approvers.setDisabled(r.org, r.params.id, true, actorFrom(r.principal))) ?? Promise.reject(approverNotFound()));
  host.handle(E.enable, async (r) => (await approvers.setDisabled(r.org, r.params.id, false, actorFrom(r.principal))) ?? Promise.reject(approverNotFound()));
  host.handle(E.learnEsign, async (r) => ({ learned: await approvers.learnEsignRef(r.org, r.email.toLowerCase(), r.userId, r.envelopeId) }));
  host.handle(ApproverSettingsEndpoints.get, async (r) => settingsView(await deps.orgSettings.get(r.org)));
  host.handle(ApproverSettingsEndpoints.put, async (r) =>
    settingsView(await deps.orgSettings.putDomains(r.org, [...new Set(r.body.allowedApproverDomains)], actorFrom(r.principal))),
  );
  // The identity provider (through the surfaces service's verified webhook).
  host.handle(E.identityUpdated, async (r) => ({ updated: await approvers.applyIdentity(r.identityUserId, { email: r.email, name: r.name }) }));
  host.handle(E.identityDisabled, async (r) => {
    let disabled = 0;
    for (const a of await approvers.byIdentity(r.identityUserId, { org: r.org, email: r.org ? r.email : undefined })) {
      if (!a.disabled && (await approvers.setDisabled(a.org_id, a.id, true, IDENTITY, 'identity'))) disabled++;
    }
    return { disabled };
  });
  // The surfaces service only (bus permissions): it has just proven the account is the person's.
  host.handle(
    E.linkChat,
    async (r) => (await approvers.linkChat(r)) ?? Promise.reject(new AppError('not_found', `no approver record for ${r.email} in this org: nothing to unlink`)),
  );
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
