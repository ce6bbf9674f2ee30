import { contractBacklogGauge, ContractEngine, contractEngineOptions, startService, type Clock, type Logger, type RunningService } from '@approvals/shared';
import type { PoliciesConfig } from './config';
import { registerApproverHandlers } from './handlers/approvers.handlers';
import { registerPolicyHandlers } from './handlers/policies.handlers';
import { createPolicyLogic, policyUsageOver } from './usecases/policies';
import { migrations } from './migrations/index';
import { createApproversStore } from './store/approvers.store';
import { createPoliciesStore } from './store/policies.store';
import { createOrgSettingsStore } from './store/org-settings.store';

export const POLICIES_VERSION = '0.1.0';

export async function startPolicies(config: PoliciesConfig, opts: { log?: Logger; clock?: Clock } = {}): Promise<RunningService> {
  return startService({
    name: 'policies',
    version: POLICIES_VERSION,
    config,
    schema: 'policies',
    migrations,
    log: opts.log,
    clock: opts.clock,
    outbox: true,
    // Decisions and the notifier cache resolved policies and approvers (bus/invalidation).
    announcesChanges: true,
    setup: async (ctx) => {
      const policies = createPoliciesStore(ctx.db);
      const approvers = createApproversStore(ctx.db);
      const orgSettings = createOrgSettingsStore(ctx.db);
      const contracts = new ContractEngine(contractEngineOptions(config));
      contractBacklogGauge('policies', contracts);
      const logic = createPolicyLogic({ policies, approvers, orgSettings, clock: ctx.clock, contracts, usage: policyUsageOver(ctx.bus) });
      registerPolicyHandlers(ctx.host, logic);
      registerApproverHandlers(ctx.host, { approvers, orgSettings, checkDomains: logic.checkDomains, bus: ctx.bus });
      return { afterStop: () => contracts.close() };
    },
  });
}
