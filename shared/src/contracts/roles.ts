import type { Principal, UserRole } from './common';

/**
 * What a signed-in person may do, by role (proof-and-reach.md section 6). A route names the
 * capability it needs (`needs` in the gateway's route table); a role has a capability or not.
 *
 * - `self`: their own contact methods, push devices, chat links, and `/v1/directory/actor`.
 * - `decide`: act on the decisions they are named on (vote, evidence, draft, refine), and read
 *   them. A `reviewer` has only this: the decisions service shows a reviewer the decisions
 *   naming them and answers 404 for any other.
 * - `read`: read the org's decisions, policies, approvers, audit, usage and integrations.
 * - `author`: create, change and delete policies; register, disable and enable approvers;
 *   register workflows and start runs from the console.
 * - `admin`: API keys, settings, integrations (install, channel, test), members, and setting
 *   or verifying someone else's channel endpoint or signature method.
 */
export type SessionCapability = 'self' | 'decide' | 'read' | 'author' | 'admin';

export const SESSION_ROLES: Record<UserRole, ReadonlySet<SessionCapability>> = {
  admin: new Set(['self', 'decide', 'read', 'author', 'admin']),
  editor: new Set(['self', 'decide', 'read', 'author']),
  member: new Set(['self', 'decide', 'read']),
  reviewer: new Set(['self', 'decide']),
};

/** Whether a session role has a capability. */
export function roleCan(role: UserRole, capability: SessionCapability): boolean {
  return SESSION_ROLES[role].has(capability);
}

/**
 * The person whose view of decisions is limited to those naming them (a reviewer), or
 * undefined when the principal sees every decision of the org.
 */
export function decisionsScopeOf(p: Principal): string | undefined {
  return p.kind === 'user' && !roleCan(p.role, 'read') ? p.email.toLowerCase() : undefined;
}
