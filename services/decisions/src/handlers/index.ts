import {
  AppError,
  DecisionsEndpoints,
  WorkflowsEndpoints,
  actorLabelOf,
  actorOf,
  decisionsScopeOf,
  withStatus,
  type Principal,
  type ServiceHost,
} from '@approvals/shared';
import type { createDecisionActions, Voter } from '../usecases/decision-actions';
import type { createDecisionReads, createWorkflows } from '../usecases/decision-reads';
import type { createDecisionOpener } from '../usecases/create-decision';
import type { createReceipts } from '../usecases/receipts';

interface Parts {
  waiters: import('./waiters').Waiters;
  create: ReturnType<typeof createDecisionOpener>;
  actions: ReturnType<typeof createDecisionActions>;
  reads: ReturnType<typeof createDecisionReads>;
  workflows: ReturnType<typeof createWorkflows>;
  receipts: ReturnType<typeof createReceipts>;
  now: () => Date;
}

function voterOf(p: Principal): Voter {
  return p.kind === 'user' ? { kind: 'person', email: p.email, ref: p.userId, surface: 'inbox' } : { kind: 'apiKey', keyId: p.keyId };
}

function requireUser(p: Principal): string {
  if (p.kind !== 'user') throw new AppError('forbidden', 'this route takes a signed-in session');
  return p.email;
}

/** Thin handlers: unpack the forwarded request, call the use case, return its answer. */
export function registerDecisionHandlers(host: ServiceHost, x: Parts): void {
  const E = DecisionsEndpoints;
  host.handle(E.create, async (r) => {
    const out = await x.create({ org: r.org, principal: r.principal, body: r.body, attempt: r.attempt });
    return withStatus(out.status, out.body as never);
  });
  host.handle(E.workerList, async (r) => x.reads.workerList(r.org, r.query));
  host.handle(E.workerGet, async (r) => x.reads.workerGet(r.org, r.params.id));
  host.handle(E.verify, async (r) => x.actions.verify(r.org, r.params.id, r.query));
  host.handle(E.consume, async (r) => x.actions.consume(r.org, r.params.id, r.body));
  host.handle(E.cancel, async (r) => x.actions.cancel(r.org, r.params.id, actorOf(r.principal), r.body?.note, actorLabelOf(r.principal)));
  // Session routes: a reviewer sees and acts on only the decisions naming them (others 404).
  const visible = (r: { org: string; principal: Principal; params: { id: string } }) =>
    x.reads.requireVisible(r.org, r.params.id, decisionsScopeOf(r.principal));
  host.handle(E.list, async (r) => x.reads.list(r.org, r.query, decisionsScopeOf(r.principal), r.principal.kind === 'user' ? r.principal.email : null));
  host.handle(E.exportChunk, async (r) => x.reads.exportChunk(r.org, r.query, decisionsScopeOf(r.principal)));
  host.handle(E.workflows, async (r) => x.reads.workflows(r.org, r.query, decisionsScopeOf(r.principal)));
  host.handle(E.get, async (r) => {
    await visible(r);
    return x.reads.get(r.org, r.params.id, r.principal.kind === 'user' ? r.principal.email : null);
  });
  host.handle(E.addEvidence, async (r) => {
    await visible(r);
    const out = await x.actions.addEvidence(r.org, r.params.id, requireUser(r.principal), r.body);
    return withStatus(out.status, out.body as never);
  });
  host.handle(E.listEvidence, async (r) => {
    await visible(r);
    return x.reads.listEvidence(r.org, r.params.id);
  });
  host.handle(E.saveOutput, async (r) => {
    await visible(r);
    return x.actions.saveOutput(r.org, r.params.id, requireUser(r.principal), r.body);
  });
  host.handle(E.refine, async (r) => {
    await visible(r);
    return x.actions.refine(r.org, r.params.id, requireUser(r.principal), r.body.feedback);
  });
  host.handle(E.vote, async (r) => {
    await visible(r);
    return x.actions.vote({
      org: r.org,
      id: r.params.id,
      voter: voterOf(r.principal),
      choice: r.body.decision,
      note: r.body.note,
      responseValue: r.body.responseValue,
    });
  });
  host.handle(E.surfaceVote, async (r) =>
    x.actions.vote({
      org: r.org,
      id: r.decisionId,
      voter: { kind: 'person', email: r.voterEmail.toLowerCase(), ref: null, surface: r.surface },
      choice: r.decision,
      note: r.note,
      responseValue: r.responseValue,
    }),
  );
  host.handle(E.workerReceipt, async (r) => x.receipts.receipt(r.org, r.params.id));
  host.handle(E.receipt, async (r) => {
    await visible(r);
    return x.receipts.receipt(r.org, r.params.id);
  });
  host.handle(E.receiptKeys, async () => x.receipts.jwks());
  host.handle(E.peek, async (r) => x.reads.peek(r.org, r.id, r.person));
  host.handle(E.byEnvelope, async (r) => x.reads.byEnvelope(r.org, r.envelopeId));
  host.handle(E.policyUsage, async (r) => x.reads.policyUsage(r.org, r.policyIds));
  host.handle(E.signatureVoided, async (r) => x.actions.signatureVoided(r.org, r.decisionId, r.note));
  host.handle(E.setPlan, async (r) => x.reads.setPlan(r.org, r.plan, r.limit));
  host.handle(E.usageCurrent, async (r) => x.reads.usageCurrent(r.org, x.now()));
  host.handle(E.usageHistory, async (r) => x.reads.usageItems(r.org));
  // Long poll: answer as soon as the decision leaves PENDING, or at the deadline still PENDING.
  host.handle(E.wait, async (r) => {
    const deadline = Date.now() + r.query.timeoutSec * 1000;
    for (;;) {
      const d = await x.reads.workerGet(r.org, r.params.id);
      const left = deadline - Date.now();
      if (d.status !== 'PENDING' || left <= 0) return d;
      // Re-check at least every 5 s in case a wake-up event was missed.
      await x.waiters.wait(r.params.id, Math.min(left, 5000));
    }
  });

  host.handle(WorkflowsEndpoints.register, async (r) => {
    const out = await x.workflows.register(r.org, r.body);
    return withStatus(out.status, out.body);
  });
  host.handle(WorkflowsEndpoints.list, async (r) => x.workflows.list(r.org));
  host.handle(WorkflowsEndpoints.get, async (r) => x.workflows.get(r.org, r.params.id));
  host.handle(WorkflowsEndpoints.startRun, async (r) => withStatus(202, await x.workflows.startRun(r.org, actorOf(r.principal), r.body)));
}
