import { PoliciesEndpoints, type ServiceHost, withStatus } from '@approvals/shared';
import type { PolicyLogic } from '../usecases/policies';

/** Wires the logic to the request/reply endpoints. Handlers only unpack and call. */
export function registerPolicyHandlers(host: ServiceHost, logic: PolicyLogic): void {
  const E = PoliciesEndpoints;
  host.handle(E.upsert, async (r) => {
    const out = await logic.upsert({ org: r.org, principal: r.principal, source: r.source, body: r.body });
    return withStatus(out.status, out.body);
  });
  host.handle(E.update, async (r) => {
    const out = await logic.update({ org: r.org, principal: r.principal, source: r.source, key: r.params.key, body: r.body });
    return withStatus(out.status, out.body);
  });
  host.handle(E.preview, async (r) => logic.preview({ org: r.org, body: r.body }));
  host.handle(E.get, async (r) => logic.get(r.org, r.params.key));
  host.handle(E.list, async (r) => logic.list(r.org, r.principal));
  host.handle(E.remove, async (r) => logic.remove({ org: r.org, principal: r.principal, key: r.params.key, force: r.query.force === 'true' }));
  host.handle(E.versions, async (r) => logic.versions(r.org, r.params.key));
  host.handle(E.version, async (r) => logic.version(r.org, r.params.key, r.params.n));
  host.handle(E.compare, async (r) => logic.compare(r.org, r.params.key, r.query.from, r.query.to));
  host.handle(E.check, async (r) => logic.check(r.org, r.body.keys));
  host.handle(E.resolve, async (r) => logic.resolve(r.org, r.key, r.version));
  host.handle(E.resolveAdhoc, async (r) => logic.resolveAdhoc(r.org, r));
}
