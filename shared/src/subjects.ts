/**
 * Every NATS name in one place. WARNING: renaming a stream, a durable consumer or a
 * subject is a migration, not a refactor: durable consumers and stored events keep
 * the old names, and replicas running the previous build still use them.
 */
export const STREAM_EVENTS = 'EVENTS';
export const EVENTS_SUBJECTS = 'evt.>';
/** Events a consumer could not handle, parked with the reason: `dlq.<durable>`. */
export const STREAM_DEADLETTER = 'DEADLETTER';
export const DEADLETTER_SUBJECTS = 'dlq.>';
export const deadLetterSubject = (durable: string) => `dlq.${durable}`;

/** NATS service names (`$SRV.PING.<name>`), one per process kind. */
export const SERVICE_NAMES = ['gateway', 'decisions', 'policies', 'notifier', 'surfaces', 'scheduler'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Request/reply subjects. Each service answers under its own `svc.<area>.` prefix. */
export const SUBJECT = {
  access: {
    echo: 'svc.access.echo',
    actorLabel: 'svc.access.actor_label',
    llmSettings: 'svc.access.llm_settings',
    retentionSettings: 'svc.access.retention_settings',
    upsertOrg: 'svc.access.upsert_org',
  },
  policies: {
    upsert: 'svc.policies.upsert',
    preview: 'svc.policies.preview',
    update: 'svc.policies.update',
    get: 'svc.policies.get',
    list: 'svc.policies.list',
    remove: 'svc.policies.remove',
    versions: 'svc.policies.versions',
    version: 'svc.policies.version',
    compare: 'svc.policies.compare',
    check: 'svc.policies.check',
    resolve: 'svc.policies.resolve',
    resolveAdhoc: 'svc.policies.resolve_adhoc',
    echo: 'svc.policies.echo',
  },
  approvers: {
    register: 'svc.approvers.register',
    list: 'svc.approvers.list',
    get: 'svc.approvers.get',
    verify: 'svc.approvers.verify',
    disable: 'svc.approvers.disable',
    enable: 'svc.approvers.enable',
    channels: 'svc.approvers.channels',
    /** From the surfaces service only: a person proved their own chat account (or unlinked it). */
    linkChat: 'svc.approvers.link_chat',
    identityUpdated: 'svc.approvers.identity_updated',
    identityDisabled: 'svc.approvers.identity_disabled',
    learnEsign: 'svc.approvers.learn_esign',
    /** From the gateway only: the orgs where an address is an enabled approver (who may ask for a sign-in link). */
    orgsOf: 'svc.approvers.orgs_of',
    settingsGet: 'svc.approvers.settings_get',
    settingsPut: 'svc.approvers.settings_put',
  },
  directory: {
    actor: 'svc.directory.actor',
  },
  decisions: {
    create: 'svc.decisions.create',
    workerList: 'svc.decisions.worker_list',
    workerGet: 'svc.decisions.worker_get',
    verify: 'svc.decisions.verify',
    consume: 'svc.decisions.consume',
    cancel: 'svc.decisions.cancel',
    list: 'svc.decisions.list',
    exportChunk: 'svc.decisions.export_chunk',
    workflows: 'svc.decisions.workflows',
    get: 'svc.decisions.get',
    addEvidence: 'svc.decisions.add_evidence',
    listEvidence: 'svc.decisions.list_evidence',
    saveOutput: 'svc.decisions.save_output',
    refine: 'svc.decisions.refine',
    vote: 'svc.decisions.vote',
    surfaceVote: 'svc.decisions.surface_vote',
    peek: 'svc.decisions.peek',
    byEnvelope: 'svc.decisions.by_envelope',
    signatureVoided: 'svc.decisions.signature_voided',
    setPlan: 'svc.decisions.set_plan',
    usageCurrent: 'svc.decisions.usage_current',
    policyUsage: 'svc.decisions.policy_usage',
    usageHistory: 'svc.decisions.usage_history',
    wait: 'svc.decisions.wait',
    workerReceipt: 'svc.decisions.worker_receipt',
    receipt: 'svc.decisions.receipt',
    receiptKeys: 'svc.decisions.receipt_keys',
    echo: 'svc.decisions.echo',
  },
  workflows: {
    register: 'svc.workflows.register',
    list: 'svc.workflows.list',
    get: 'svc.workflows.get',
    startRun: 'svc.workflows.start_run',
  },
  notifier: {
    contactMethodsGet: 'svc.notifier.contact_methods_get',
    contactMethodsPut: 'svc.notifier.contact_methods_put',
    pushDeviceRegister: 'svc.notifier.push_device_register',
    pushDeviceList: 'svc.notifier.push_device_list',
    pushDeviceRevoke: 'svc.notifier.push_device_revoke',
    deliveries: 'svc.notifier.deliveries',
    revokeUserDevices: 'svc.notifier.revoke_user_devices',
    engineSettingsGet: 'svc.notifier.engine_settings_get',
    engineSettingsPut: 'svc.notifier.engine_settings_put',
    engineTest: 'svc.notifier.engine_test',
    engineConfigured: 'svc.notifier.engine_configured',
    callbackSettingsGet: 'svc.notifier.callback_settings_get',
    callbackSecretRotate: 'svc.notifier.callback_secret_rotate',
    echo: 'svc.notifier.echo',
    /** The gateway hands over sign-in links to mail (the email-link sign-in and member invitations). */
    signInMail: 'svc.notifier.sign_in_mail',
  },
  integrations: {
    chatA: {
      get: 'svc.integrations.chatA.get',
      channels: 'svc.integrations.chatA.channels',
      setChannel: 'svc.integrations.chatA.set_channel',
      test: 'svc.integrations.chatA.test',
      deliberation: 'svc.integrations.chatA.deliberation',
      deliberationTest: 'svc.integrations.chatA.deliberation_test',
      link: 'svc.integrations.chatA.link',
      linkLookup: 'svc.integrations.chatA.link_lookup',
    },
    chatB: {
      get: 'svc.integrations.chatB.get',
      channels: 'svc.integrations.chatB.channels',
      setChannel: 'svc.integrations.chatB.set_channel',
      test: 'svc.integrations.chatB.test',
      link: 'svc.integrations.chatB.link',
    },
    /** The signed-in person's own chat accounts (`/v1/me/chat-links`). */
    myLinks: 'svc.integrations.my_links',
    unlink: 'svc.integrations.unlink',
  },
  surfaces: {
    callback: 'svc.surfaces.callback',
    mintLinks: 'svc.surfaces.mint_links',
    chatNotify: 'svc.surfaces.chat_notify',
    chatFollows: 'svc.surfaces.chat_follows',
    esignSettingsGet: 'svc.surfaces.esign_settings_get',
    esignSettingsPut: 'svc.surfaces.esign_settings_put',
    echo: 'svc.surfaces.echo',
  },
  scheduler: {
    timers: 'svc.scheduler.timers',
    echo: 'svc.scheduler.echo',
  },
} as const;

/** Domain event subjects on the EVENTS stream. */
export const EVENT = {
  decisionCreated: 'evt.decision.created',
  decisionVoteRecorded: 'evt.decision.vote_recorded',
  decisionVoteRefused: 'evt.decision.vote_refused',
  decisionResolved: 'evt.decision.resolved',
  decisionCancelled: 'evt.decision.cancelled',
  decisionConsumed: 'evt.decision.consumed',
  decisionEvidenceAdded: 'evt.decision.evidence_added',
  decisionReminded: 'evt.decision.reminded',
  decisionEscalated: 'evt.decision.escalated',
  /**
   * What a chat installation follows of a decision (created, a vote, resolved, cancelled),
   * published by the decisions service next to the event itself, only for orgs with a chat
   * installation (docs/architecture.md "Chat follows a decision").
   */
  decisionChat: 'evt.decision.chat',
  /**
   * What the scheduler follows of a decision (created, resolved, cancelled), written by
   * the decisions service next to the event itself, only for decisions with timers
   * (docs/architecture.md "Timers follow a decision").
   */
  decisionTimers: 'evt.decision.timers',
  /** A decision opened with a callbackUrl ended: the notifier POSTs its callback (written next to the end's event, only for such decisions). */
  decisionCallback: 'evt.decision.callback',
  policyForceDeleted: 'evt.policy.force_deleted',
  /** A policy created, changed (a new version or new labels), restored or archived: the audit log's. */
  policyChanged: 'evt.policy.changed',
  approverDisabled: 'evt.approver.disabled',
  approverEnabled: 'evt.approver.enabled',
  /** An approver registered or changed: channels, methods, an endpoint set or proven (audited; a change by someone else is mailed to the approver). */
  approverChanged: 'evt.approver.changed',
  /** An org's approver settings changed (the domains approvers may come from): audited. */
  approverSettingsChanged: 'evt.approver.settings_changed',
  /** An org setting changed in a service that owns it (engines, the signature provider, chat integrations): audited. */
  settingsChanged: 'evt.settings.changed',
  /** A person linked their own chat account to their approver record, or unlinked it (`endpoint` null). */
  approverChatLinkChanged: 'evt.approver.chat_link_changed',
  timerExpireDue: 'evt.timer.expire_due',
  timerRemindDue: 'evt.timer.remind_due',
  timerEscalateDue: 'evt.timer.escalate_due',
  timerRetentionDue: 'evt.timer.retention_due',
  runRequested: 'evt.run.requested',
  notificationSent: 'evt.notification.sent',
  notificationSkipped: 'evt.notification.skipped',
  /** One attempt to deliver a decision's callback (sent or failed): the decision's timeline. */
  callbackAttempted: 'evt.notification.callback',
  test: 'evt.test.ping',
} as const;
export type EventSubject = (typeof EVENT)[keyof typeof EVENT];

/**
 * Durables no longer used, deleted by the JetStream provisioning step (bus/jetstream.ts).
 * `gateway-audit` and `policies-decision-usage` took a wildcard (`evt.>`, `evt.decision.>`) and so received,
 * and acknowledged, every event it ignored; their successors, one per subject they need,
 * start from the stream's beginning, and what they apply is keyed by event or decision
 * id, so replaying changes nothing. The policies service's three decision durables kept
 * a projection of policy usage that the decisions service now answers from its own rows
 * (`svc.decisions.policy_usage`). The surfaces service's four decision durables received
 * every decision of every org, though only orgs with a chat installation need any; it
 * now takes `evt.decision.chat`, published for those orgs alone. The scheduler's three
 * received every decision, though only decisions with timers need any; it now takes
 * `evt.decision.timers`, written for those decisions alone.
 */
export const RETIRED_DURABLES: Partial<Record<ServiceName, string[]>> = {
  gateway: ['gateway-audit', 'gateway-audit-force-deleted'],
  policies: ['policies-decision-usage', 'policies-decision-created', 'policies-decision-resolved', 'policies-decision-cancelled'],
  surfaces: ['surfaces-decision-created', 'surfaces-decision-resolved', 'surfaces-vote-recorded', 'surfaces-decision-cancelled'],
  scheduler: ['scheduler-decision-created', 'scheduler-decision-resolved', 'scheduler-decision-cancelled'],
};

/**
 * Durable consumer names: `<service>-<what>`. One durable per (service, filter subject)
 * because nats-server 2.9 allows one filter subject per consumer.
 */
export const DURABLE = {
  gatewayAuditPolicy: 'gateway-audit-policy',
  gatewayAuditApprover: 'gateway-audit-approver',
  gatewayAuditDecisionCreated: 'gateway-audit-decision-created',
  gatewayAuditVoteRecorded: 'gateway-audit-vote-recorded',
  gatewayAuditResolved: 'gateway-audit-resolved',
  gatewayAuditVoteRefused: 'gateway-audit-vote-refused',
  gatewayAuditSettings: 'gateway-audit-settings',
  gatewayAuditConsumed: 'gateway-audit-consumed',
  gatewayAuditCancelled: 'gateway-audit-cancelled',
  decisionsTimerExpire: 'decisions-timer-expire',
  decisionsTimerRemind: 'decisions-timer-remind',
  decisionsTimerEscalate: 'decisions-timer-escalate',
  decisionsTimerRetention: 'decisions-timer-retention',
  decisionsNotificationSent: 'decisions-notification-sent',
  surfacesTimerRetention: 'surfaces-timer-retention',
  surfacesDecisionChat: 'surfaces-decision-chat',
  decisionsApproverState: 'decisions-approver-state',
  decisionsNotificationSkipped: 'decisions-notification-skipped',
  decisionsCallbackAttempted: 'decisions-callback-attempted',
  notifierDecisionCreated: 'notifier-decision-created',
  notifierDecisionResolved: 'notifier-decision-resolved',
  notifierDecisionReminded: 'notifier-decision-reminded',
  notifierDecisionEscalated: 'notifier-decision-escalated',
  notifierRunRequested: 'notifier-run-requested',
  notifierApproverChanged: 'notifier-approver-changed',
  notifierDecisionCallback: 'notifier-decision-callback',
  schedulerDecisionTimers: 'scheduler-decision-timers',
} as const;
export type Durable = (typeof DURABLE)[keyof typeof DURABLE];

/**
 * The one subject each durable takes (its filter subject): what the provisioning step
 * creates it with (bus/jetstream.ts) and what its service checks at start. A durable's
 * subject is never changed in place: a new subject is a new durable (see RETIRED_DURABLES).
 */
export const DURABLE_SUBJECT = {
  // Every policy and approver event is audited: one durable over each.
  [DURABLE.gatewayAuditPolicy]: 'evt.policy.>',
  [DURABLE.gatewayAuditApprover]: 'evt.approver.>',
  [DURABLE.gatewayAuditDecisionCreated]: EVENT.decisionCreated,
  [DURABLE.gatewayAuditVoteRecorded]: EVENT.decisionVoteRecorded,
  [DURABLE.gatewayAuditResolved]: EVENT.decisionResolved,
  [DURABLE.gatewayAuditSettings]: EVENT.settingsChanged,
  [DURABLE.gatewayAuditVoteRefused]: EVENT.decisionVoteRefused,
  [DURABLE.gatewayAuditConsumed]: EVENT.decisionConsumed,
  [DURABLE.gatewayAuditCancelled]: EVENT.decisionCancelled,
  [DURABLE.decisionsTimerExpire]: EVENT.timerExpireDue,
  [DURABLE.decisionsTimerRemind]: EVENT.timerRemindDue,
  [DURABLE.decisionsTimerEscalate]: EVENT.timerEscalateDue,
  [DURABLE.decisionsTimerRetention]: EVENT.timerRetentionDue,
  [DURABLE.decisionsNotificationSent]: EVENT.notificationSent,
  [DURABLE.surfacesTimerRetention]: EVENT.timerRetentionDue,
  [DURABLE.surfacesDecisionChat]: EVENT.decisionChat,
  // Both approver events (disabled, enabled) in one durable: their order matters.
  [DURABLE.decisionsApproverState]: 'evt.approver.>',
  [DURABLE.decisionsNotificationSkipped]: EVENT.notificationSkipped,
  [DURABLE.decisionsCallbackAttempted]: EVENT.callbackAttempted,
  [DURABLE.notifierDecisionCreated]: EVENT.decisionCreated,
  [DURABLE.notifierDecisionResolved]: EVENT.decisionResolved,
  [DURABLE.notifierDecisionReminded]: EVENT.decisionReminded,
  [DURABLE.notifierDecisionEscalated]: EVENT.decisionEscalated,
  [DURABLE.notifierRunRequested]: EVENT.runRequested,
  [DURABLE.notifierApproverChanged]: EVENT.approverChanged,
  [DURABLE.notifierDecisionCallback]: EVENT.decisionCallback,
  [DURABLE.schedulerDecisionTimers]: EVENT.decisionTimers,
} as const satisfies Record<Durable, string>;
