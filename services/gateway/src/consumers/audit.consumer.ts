import { DURABLE, EVENT, batchConsumerOf, OFF_PATH_LINGER_MS, type DomainEvent, type EventSubject } from '@approvals/shared';
import type { AccessStore, AuditEntry } from '../store/access.store';
import type { ApproverOfOrg, SignInStore } from '../store/sign-in.store';

type Entry = Pick<AuditEntry, 'action' | 'actor' | 'actorLabel' | 'target'>;

/**
 * The audit entry an event makes, for the events that belong in the org's audit log
 * (proof-and-reach.md section 6: every change of roles, policies, approvers and settings,
 * and decisions created, each vote, resolutions, cancels and consumes).
 */
export function auditEntryOf(e: DomainEvent): Entry | undefined {
  switch (e.type) {
    case EVENT.policyForceDeleted:
      return { action: 'policy.force_deleted', actor: e.data.actor, actorLabel: e.data.actorLabel ?? null, target: e.data.key };
    case EVENT.policyChanged:
      return { action: `policy.${e.data.change}`, actor: e.data.actor, actorLabel: e.data.actorLabel, target: e.data.key };
    case EVENT.approverChanged:
      return { action: `approver.${e.data.change}`, actor: e.data.actor, actorLabel: e.data.actorLabel, target: e.data.approverId };
    case EVENT.approverSettingsChanged:
      return { action: 'approver.settings_changed', actor: e.data.actor, actorLabel: e.data.actorLabel, target: null };
    case EVENT.approverDisabled:
    case EVENT.approverEnabled:
      return {
        action: e.type === EVENT.approverDisabled ? 'approver.disabled' : 'approver.enabled',
        actor: e.data.actor ?? null,
        actorLabel: e.data.actorLabel ?? (e.data.reason === 'identity' ? 'identity provider' : null),
        target: e.data.approverId,
      };
    case EVENT.settingsChanged:
      return { action: 'settings.changed', actor: e.data.actor, actorLabel: e.data.actorLabel, target: e.data.kind };
    case EVENT.decisionCreated:
      return { action: 'decision.created', actor: e.data.requestedBy ?? null, actorLabel: e.data.requestedByLabel ?? null, target: e.data.decisionId };
    case EVENT.decisionVoteRecorded:
      return { action: 'decision.vote', actor: e.data.voter, actorLabel: e.data.voter, target: e.data.decisionId };
    case EVENT.decisionResolved:
      return {
        action: 'decision.resolved',
        actor: e.data.decidedBy,
        actorLabel: e.data.decidedBy ?? (e.data.status === 'EXPIRED' ? 'timeout' : null),
        target: e.data.decisionId,
      };
    case EVENT.decisionVoteRefused:
      return { action: 'decision.vote_refused', actor: e.data.actor, target: e.data.decisionId };
    case EVENT.decisionConsumed:
      return { action: 'decision.consumed', actor: e.data.consumer, actorLabel: e.data.consumer, target: e.data.decisionId };
    case EVENT.decisionCancelled:
      return { action: 'decision.cancelled', actor: e.data.actor ?? undefined, target: e.data.decisionId };
    case EVENT.approverChatLinkChanged:
      return {
        action: e.data.endpoint === null ? 'approver.chat_unlinked' : 'approver.chat_linked',
        actor: e.data.actor,
        actorLabel: e.data.actor,
        target: e.data.approverId,
      };
    default:
      return undefined;
  }
}

/**
 * Events that belong in the org's audit log, one durable per subject (nats-server 2.9: one
 * filter each; the policy and approver subjects are all audited, so a wildcard over each
 * loses nothing). The entry is keyed by event id, so a redelivered event writes nothing
 * twice. The events waiting together (up to OFF_PATH_LINGER_MS) are written in one statement.
 */
/**
 * How an event changes who is an approver of an org, for who may sign in by email as a
 * `reviewer` (docs/access.md): named on a decision or registered adds them; disabled (an
 * admin, or the identity provider for a leaver) takes them out; enabled puts them back.
 */
export function reachOf(e: DomainEvent): { add: ApproverOfOrg[]; remove: ApproverOfOrg[] } {
  const one = (email: string) => [{ org: e.org, email }];
  switch (e.type) {
    case EVENT.decisionCreated:
      return { add: e.data.approvers.map((email) => ({ org: e.org, email })), remove: [] };
    case EVENT.approverChanged:
      return { add: e.data.change === 'registered' ? one(e.data.email) : [], remove: [] };
    case EVENT.approverEnabled:
      return { add: one(e.data.email), remove: [] };
    case EVENT.approverDisabled:
      return { add: [], remove: one(e.data.email) };
    default:
      return { add: [], remove: [] };
  }
}

/**
 * What a batch of events changes, as one change: each person's last word in event order
 * counts (a disable after a registration in one batch leaves them out, an enable after a
 * disable puts them back), the same as applying the events one by one, in one statement
 * rather than one per event.
 */
export function reachOfAll(events: DomainEvent[]): { add: ApproverOfOrg[]; remove: ApproverOfOrg[] } {
  const last = new Map<string, { who: ApproverOfOrg; added: boolean }>();
  for (const e of events) {
    const change = reachOf(e);
    for (const who of change.add) last.set(`${who.org}\u0000${who.email.toLowerCase()}`, { who, added: true });
    for (const who of change.remove) last.set(`${who.org}\u0000${who.email.toLowerCase()}`, { who, added: false });
  }
  const all = [...last.values()];
  return { add: all.filter((x) => x.added).map((x) => x.who), remove: all.filter((x) => !x.added).map((x) => x.who) };
}

export function auditConsumers(store: AccessStore, signIn: Pick<SignInStore, 'applyReach'>) {
  const append = async (events: DomainEvent[]) => {
    const change = reachOfAll(events);
    if (change.add.length || change.remove.length) await signIn.applyReach(change);
    await appendAudit(events);
  };
  const appendAudit = async (events: DomainEvent[]) =>
    store.appendAuditMany(
      events.flatMap((event) => {
        const entry = auditEntryOf(event);
        return entry ? [{ org: event.org, ...entry, details: event.data as Record<string, unknown>, eventId: event.id, at: new Date(event.occurredAt) }] : [];
      }),
    );
  const consumer = (durable: string, subject: EventSubject | `evt.${string}.>`) =>
    batchConsumerOf(durable, subject as EventSubject, append, { lingerMs: OFF_PATH_LINGER_MS });
  return [
    consumer(DURABLE.gatewayAuditPolicy, 'evt.policy.>'),
    consumer(DURABLE.gatewayAuditApprover, 'evt.approver.>'),
    consumer(DURABLE.gatewayAuditDecisionCreated, EVENT.decisionCreated),
    consumer(DURABLE.gatewayAuditVoteRecorded, EVENT.decisionVoteRecorded),
    consumer(DURABLE.gatewayAuditResolved, EVENT.decisionResolved),
    consumer(DURABLE.gatewayAuditSettings, EVENT.settingsChanged),
    consumer(DURABLE.gatewayAuditVoteRefused, EVENT.decisionVoteRefused),
    consumer(DURABLE.gatewayAuditConsumed, EVENT.decisionConsumed),
    consumer(DURABLE.gatewayAuditCancelled, EVENT.decisionCancelled),
  ];
}
