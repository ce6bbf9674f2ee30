import { DURABLE, EVENT, SERVICE_NAMES, STREAM_DEADLETTER, STREAM_EVENTS, SUBJECT, deadLetterSubject, type ServiceName } from '../subjects';
import { LARGE_BUCKET_STREAM } from './jetstream';
import { LARGE_BUCKET } from './large';

/**
 * Who may say what on the bus. Each service connects as its own NATS user; its publish and
 * subscribe permissions are derived from this one table, so a credential taken from one
 * service cannot cast a vote (`svc.decisions.surface_vote` is the surfaces service's) or
 * read an org's model key (`svc.access.llm_settings` is for decisions only).
 *
 * Add a subject here when a service starts serving, calling, publishing or consuming it;
 * the suite runs every service under these permissions, so a missing entry fails a test.
 */
export interface BusRole {
  /** Request subjects it answers (queue-group subscriptions). */
  serves: string[];
  /** Request subjects it calls; `*` patterns allowed. */
  calls: string[];
  /** Calls it may never make, even when a pattern above would allow them. */
  neverCalls?: string[];
  /** Event subjects it publishes (through its outbox). */
  publishes: string[];
  /** Event subjects it subscribes to directly (core NATS, no durable): what wakes its long polls. */
  listens?: string[];
}

/** Internal subjects: services call them, the public gateway never does. */
const INTERNAL = [
  SUBJECT.decisions.surfaceVote,
  SUBJECT.decisions.peek,
  SUBJECT.decisions.policyUsage,
  SUBJECT.policies.resolve,
  SUBJECT.policies.resolveAdhoc,
  SUBJECT.approvers.channels,
  SUBJECT.approvers.linkChat,
  SUBJECT.surfaces.mintLinks,
  SUBJECT.surfaces.chatNotify,
  SUBJECT.surfaces.chatFollows,
  SUBJECT.access.upsertOrg,
  SUBJECT.approvers.identityUpdated,
  SUBJECT.approvers.identityDisabled,
  SUBJECT.approvers.learnEsign,
  SUBJECT.decisions.byEnvelope,
  SUBJECT.decisions.signatureVoided,
  SUBJECT.decisions.setPlan,
  SUBJECT.notifier.revokeUserDevices,
  SUBJECT.notifier.engineConfigured,
];

export const BUS_ROLES: Record<ServiceName, BusRole> = {
  gateway: {
    serves: ['svc.access.>'],
    // Forwards HTTP routes to their owners; never the internal subjects.
    calls: [
      'svc.decisions.>',
      'svc.workflows.>',
      'svc.policies.>',
      'svc.approvers.>',
      'svc.directory.>',
      'svc.notifier.>',
      'svc.surfaces.>',
      'svc.scheduler.>',
      'svc.integrations.>',
    ],
    neverCalls: INTERNAL,
    publishes: [],
  },
  decisions: {
    serves: ['svc.decisions.>', 'svc.workflows.>'],
    calls: [
      SUBJECT.notifier.engineConfigured,
      SUBJECT.policies.resolve,
      SUBJECT.policies.resolveAdhoc,
      SUBJECT.access.llmSettings,
      SUBJECT.access.retentionSettings,
      SUBJECT.surfaces.chatFollows,
    ],
    publishes: ['evt.decision.>', 'evt.run.>'],
    // The long-poll waiters (handlers/waiters.ts) wake on the end of a decision as it is published.
    listens: [EVENT.decisionResolved, EVENT.decisionCancelled],
  },
  policies: {
    serves: ['svc.policies.>', 'svc.approvers.>', 'svc.directory.>'],
    calls: [SUBJECT.access.actorLabel, SUBJECT.decisions.policyUsage],
    publishes: ['evt.policy.>', 'evt.approver.>'],
  },
  notifier: {
    serves: ['svc.notifier.>'],
    calls: [SUBJECT.approvers.channels, SUBJECT.decisions.peek, SUBJECT.surfaces.mintLinks, SUBJECT.surfaces.chatNotify],
    // Its settings changes (engines) for the audit log.
    publishes: ['evt.notification.>', 'evt.settings.changed'],
  },
  surfaces: {
    serves: ['svc.surfaces.>', 'svc.integrations.>'],
    calls: [
      SUBJECT.decisions.surfaceVote,
      SUBJECT.decisions.peek,
      SUBJECT.approvers.channels,
      // A person's own chat account, proven by the provider's sign-in or Slack's directory.
      SUBJECT.approvers.linkChat,
      // The signature, identity and billing webhooks, applied by the services that own what they change.
      SUBJECT.decisions.byEnvelope,
      SUBJECT.decisions.signatureVoided,
      SUBJECT.decisions.setPlan,
      SUBJECT.approvers.identityUpdated,
      SUBJECT.approvers.identityDisabled,
      SUBJECT.approvers.learnEsign,
      SUBJECT.notifier.revokeUserDevices,
      SUBJECT.access.upsertOrg,
    ],
    // Its settings changes (chat integrations, the signature provider) for the audit log.
    publishes: ['evt.settings.changed'],
  },
  scheduler: {
    serves: ['svc.scheduler.>'],
    calls: [],
    publishes: ['evt.timer.>'],
  },
};

/**
 * JetStream administration, the provisioning step's (bus/jetstream.ts, as the admin user):
 * denied to every service whatever its grants say, so that a grant added later cannot
 * hand a service's credentials the power to drop unconsumed events, re-filter a durable
 * to read every org's events, or empty the large-body bucket. (The services' grants allow
 * none of it anyway; this says so in the server's configuration.)
 */
export const JETSTREAM_ADMIN_SUBJECTS: readonly string[] = [
  ...['CREATE', 'UPDATE', 'DELETE', 'PURGE', 'MSG.DELETE'].map((op) => `$JS.API.STREAM.${op}.>`),
  '$JS.API.CONSUMER.DURABLE.CREATE.>',
  '$JS.API.CONSUMER.DELETE.>',
  ...[STREAM_EVENTS, STREAM_DEADLETTER].flatMap((s) => [`$JS.API.CONSUMER.CREATE.${s}`, `$JS.API.CONSUMER.CREATE.${s}.>`]),
];

/** The inbox prefix of a service's connection: replies to it are readable by it alone. */
export function inboxPrefixOf(user: string): string {
  return `_INBOX_${user}`;
}

export interface NatsPermissions {
  publish: { allow: string[]; deny: string[] };
  subscribe: { allow: string[] };
}

/**
 * Whether two subject patterns (`*` one token, `>` the rest) can match a subject in common.
 */
export function subjectsOverlap(a: string, b: string): boolean {
  const x = a.split('.');
  const y = b.split('.');
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const p = x[i];
    const q = y[i];
    if (p === '>' || q === '>') return p !== undefined && q !== undefined;
    if (p === undefined || q === undefined) return false;
    if (p !== '*' && q !== '*' && p !== q) return false;
  }
  return true;
}

/** The services that call something `name` serves: the ones whose requests it answers. */
export function callersOf(name: ServiceName): ServiceName[] {
  const serves = BUS_ROLES[name].serves;
  return SERVICE_NAMES.filter((other) => other !== name && BUS_ROLES[other].calls.some((c) => serves.some((s) => subjectsOverlap(c, s))));
}

/** The durable consumers a service owns (`<service>-<what>`). */
export function durablesOf(name: ServiceName): string[] {
  return Object.values(DURABLE).filter((d) => d.startsWith(`${name}-`));
}

/**
 * NATS permissions of one service's user, derived from BUS_ROLES.
 *
 * A service answers requests by publishing to the inboxes of those who may ask it: the
 * services that call what it serves, the gateway (its health check pings every service
 * over `$SRV`, itself included), and the operators' tools (the admin user's inbox, and the default
 * `_INBOX` of a client with no prefix of its own, as the nats CLI). Explicit grants, not
 * `allow_responses`: with that, nats-server 2.9 remembers the reply subject of every
 * message it delivers to the service, acks' included (`$JS.ACK...`, granted above, so
 * never taken off), for two minutes, and once more than 4,096 are remembered walks all of
 * them on every delivery: a service's every message then cost nats-server time in
 * proportion to its last two minutes of traffic (docs/history/performance-rounds.md, sixteenth round).
 * `users` names each service's user and the admin's (the generated server configuration);
 * without it, each service's user is its name.
 */
export function natsPermissionsOf(name: ServiceName, users?: Partial<Record<ServiceName | 'admin', { user: string }>>): NatsPermissions {
  const userOf = (s: ServiceName) => users?.[s]?.user ?? s;
  const user = userOf(name);
  const role = BUS_ROLES[name];
  const js = '$JS.API';
  const durables = durablesOf(name);
  const obj = LARGE_BUCKET_STREAM;
  return {
    publish: {
      allow: [
        ...role.calls,
        ...role.publishes,
        // Announcements of changes to what it owns, for the caches of it (bus/invalidation).
        `cache.${name}`,
        // JetStream as a user of what the provisioning step made (bus/jetstream.ts): no
        // stream or consumer is created, changed, purged or deleted with a service's
        // credentials (`$JS.API.STREAM.CREATE/UPDATE/DELETE/PURGE`, `CONSUMER.CREATE/
        // DURABLE.CREATE/DELETE` are not granted). The client's check that JetStream is
        // there, and the start's check that the streams and the bucket are.
        `${js}.INFO`,
        ...[STREAM_EVENTS, STREAM_DEADLETTER, obj].map((s) => `${js}.STREAM.INFO.${s}`),
        // Events its consumers cannot handle are parked under its own durables' names.
        ...durables.map((d) => deadLetterSubject(d)),
        // Its own durables: read (the start's check, the gauges), pull, ack.
        ...durables.flatMap((d) => [
          `${js}.CONSUMER.INFO.${STREAM_EVENTS}.${d}`,
          `${js}.CONSUMER.MSG.NEXT.${STREAM_EVENTS}.${d}`,
          `$JS.ACK.${STREAM_EVENTS}.${d}.>`,
        ]),
        // The objects of the bucket that carries bodies over max_payload (bus/large.ts):
        // put (chunks, then meta), read (the meta by subject; the chunks of one object
        // through an ordered consumer filtered to them: the subject names the filter, and
        // the server holds the request to it), and drop (rollups of its chunks and meta).
        `$O.${LARGE_BUCKET}.>`,
        `${js}.STREAM.MSG.GET.${obj}`,
        `${js}.CONSUMER.CREATE.${obj}.*.$O.${LARGE_BUCKET}.C.*`,
        // Reading an object is a push consumer with flow control: the server may ask the
        // reader to answer its flow-control messages (`$JS.FC...`), which allow_responses
        // used to let through. The service-host test's 1.5 MB bodies never drew one.
        `$JS.FC.${obj}.>`,
        // Service discovery: the gateway's health check pings every service.
        ...(name === 'gateway' ? ['$SRV.>'] : []),
        // Answers: to the inboxes of those who may ask (see above).
        // Its own too: the gateway's health check pings the gateway as well.
        ...[...new Set<ServiceName>([...callersOf(name), 'gateway', name])].map((s) => `${inboxPrefixOf(userOf(s))}.>`),
        ...(users?.admin ? [`${inboxPrefixOf(users.admin.user)}.>`] : []),
        '_INBOX.>',
      ],
      deny: [...JETSTREAM_ADMIN_SUBJECTS, ...(role.neverCalls ?? [])],
    },
    subscribe: {
      allow: [...role.serves, ...(role.listens ?? []), '$SRV.>', `${inboxPrefixOf(user)}.>`, 'cache.>'],
    },
  };
}

export interface NatsUser {
  user: string;
  password: string;
}

/**
 * The `authorization` block of a nats-server (2.9+) configuration: one user per service
 * with its permissions, and `admin` (the JetStream provisioning step, operators' tools and
 * tests) with all of them.
 * Passwords are written as given (bcrypt hashes work too: nats-server accepts `$2a$…`).
 */
export function natsAuthorizationConfig(users: Record<ServiceName, NatsUser> & { admin: NatsUser }): string {
  const q = (s: string) => JSON.stringify(s);
  const list = (xs: string[]) => `[${xs.map(q).join(', ')}]`;
  const entries = SERVICE_NAMES.map((name) => {
    const u = users[name];
    const p = natsPermissionsOf(name, users);
    return `    {
      user: ${q(u.user)}
      password: ${q(u.password)}
      permissions: {
        publish: { allow: ${list(p.publish.allow)}, deny: ${list(p.publish.deny)} }
        subscribe: { allow: ${list(p.subscribe.allow)} }
      }
    }`;
  });
  entries.push(`    { user: ${q(users.admin.user)}, password: ${q(users.admin.password)} }`);
  return `authorization {\n  users: [\n${entries.join('\n')}\n  ]\n}\n`;
}
