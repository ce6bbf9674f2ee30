import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type ConsumerInfo,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/nats-core';
import { Objm } from '@nats-io/obj';
import type { Logger } from '../logger';
import { DEADLETTER_SUBJECTS, DURABLE_SUBJECT, EVENTS_SUBJECTS, RETIRED_DURABLES, STREAM_DEADLETTER, STREAM_EVENTS } from '../subjects';
import type { Bus } from './bus';
import { LARGE_BUCKET, LARGE_BUCKET_STORAGE, LARGE_TTL_MS } from './large';

/**
 * What JetStream holds for the services, declared once: the streams, the large-body bucket
 * and every durable consumer with its subject and settings. `provisionJetStream` makes the
 * server match it, run by an administrative NATS user before the services start (the
 * migrate step, `npm start`, `npm run cluster`, the bench, the chaos run, the tests). The
 * services' own NATS users may not create, change, purge or delete any of it
 * (bus/permissions.ts): a service finds what it needs there, or stops at start saying so.
 */

/** Where a stream, bucket or durable comes from: said by every error about one that is missing. */
export const PROVISIONING_HINT =
  'JetStream is provisioned before the services start, by an administrative NATS user: `<image> migrate` (the Kubernetes Job, compose), `npm start`, `npm run cluster` (docs/operations.md "JetStream provisioning")';

/** A stream, bucket or durable a service needs is missing or not as this build declares it. */
export class JetStreamNotProvisioned extends Error {
  override name = 'JetStreamNotProvisioned';
}

type StreamDecl = Pick<StreamConfig, 'name' | 'subjects' | 'retention' | 'storage' | 'max_age' | 'duplicate_window'>;

export const STREAMS: readonly StreamDecl[] = [
  {
    name: STREAM_EVENTS,
    subjects: [EVENTS_SUBJECTS],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: nanos(7 * 24 * 3600 * 1000),
    // Long enough to cover an outbox relay that crashed after publishing and was
    // restarted: its republish carries the same Nats-Msg-Id and is dropped.
    duplicate_window: nanos(20 * 60 * 1000),
  },
  {
    name: STREAM_DEADLETTER,
    subjects: [DEADLETTER_SUBJECTS],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    // Parked events wait for a person: a month to look at them and replay.
    max_age: nanos(30 * 24 * 3600 * 1000),
    duplicate_window: nanos(20 * 60 * 1000),
  },
];

/** The stream behind the large-body bucket (the object store's naming). */
export const LARGE_BUCKET_STREAM = `OBJ_${LARGE_BUCKET}`;

/** A durable pull consumer on EVENTS: its name, the one subject it takes, and its settings. */
export interface DurableSpec {
  durable: string;
  filterSubject: string;
  /** Deliveries before the consumer parks an event as exhausted (default 50). */
  maxDeliver?: number;
  /** How long a delivery may go unacknowledged before it is redelivered (default 30 s). */
  ackWaitMs?: number;
}

export const DURABLE_DEFAULTS = { maxDeliver: 50, ackWaitMs: 30_000 } as const;

/** Every service's durables (DURABLE_SUBJECT in subjects.ts), with the default settings. */
export const DURABLES: readonly DurableSpec[] = Object.entries(DURABLE_SUBJECT).map(([durable, filterSubject]) => ({ durable, filterSubject }));

/** The consumer configuration a durable is created with. */
export function durableConfig(spec: DurableSpec): Partial<ConsumerConfig> & { durable_name: string } {
  return {
    durable_name: spec.durable,
    filter_subject: spec.filterSubject,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    max_deliver: spec.maxDeliver ?? DURABLE_DEFAULTS.maxDeliver,
    ack_wait: nanos(spec.ackWaitMs ?? DURABLE_DEFAULTS.ackWaitMs),
  };
}

function isApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

function isStreamNotFound(err: unknown): boolean {
  return isApiError(err, JetStreamApiCodes.StreamNotFound) || /stream not found/i.test(String((err as Error)?.message));
}

function isConsumerNotFound(err: unknown): boolean {
  return isApiError(err, JetStreamApiCodes.ConsumerNotFound) || /consumer not found/i.test(String((err as Error)?.message));
}

/**
 * Creates a durable, or brings the settings of an existing one (deliveries, ack wait) up to
 * date. Its subject is never changed: nats-server 2.9 cannot, and a durable's subject is its
 * identity (a new subject is a new durable, the old one retired): a durable found with
 * another subject stops the provisioning with a message. Returns what it did.
 */
export async function ensureDurable(jsm: JetStreamManager, spec: DurableSpec): Promise<'created' | 'updated' | 'unchanged'> {
  const want = durableConfig(spec);
  let info: ConsumerInfo;
  try {
    info = await jsm.consumers.info(STREAM_EVENTS, spec.durable);
  } catch (err) {
    if (!isConsumerNotFound(err)) throw err;
    // Another provisioner may add it at the same moment: the same configuration is no conflict.
    await jsm.consumers.add(STREAM_EVENTS, want);
    return 'created';
  }
  if (info.config.filter_subject !== spec.filterSubject) {
    throw new JetStreamNotProvisioned(
      `durable consumer ${spec.durable} takes ${info.config.filter_subject ?? 'every subject'}, declared ${spec.filterSubject}: a durable's subject is never changed in place; give the new subject a new durable and retire this one (RETIRED_DURABLES in shared/src/subjects.ts)`,
    );
  }
  if (info.config.max_deliver === want.max_deliver && info.config.ack_wait === want.ack_wait) return 'unchanged';
  await jsm.consumers.update(STREAM_EVENTS, spec.durable, { max_deliver: want.max_deliver, ack_wait: want.ack_wait });
  return 'updated';
}

/**
 * Creates a stream or brings its configuration (subjects, limits, duplicate window) up to
 * date; the replica count of an existing stream is the operator's and is left alone.
 */
async function ensureStream(jsm: JetStreamManager, config: StreamDecl, replicas: number): Promise<'created' | 'updated'> {
  try {
    await jsm.streams.info(config.name);
    await jsm.streams.update(config.name, config);
    return 'updated';
  } catch (err) {
    if (!isStreamNotFound(err)) throw err;
    try {
      await jsm.streams.add({ ...config, num_replicas: replicas });
    } catch (addErr) {
      // Another provisioner created it between our info and add: the server says "already
      // in use" or, while the other add is in flight, "subjects overlap". Either way the
      // stream is there now; if it is not, the error was real.
      if (!(await streamExists(jsm, config.name))) throw addErr;
    }
    return 'created';
  }
}

/** Whether the stream exists, looked for a few times while another provisioner's add completes. */
async function streamExists(jsm: JetStreamManager, name: string): Promise<boolean> {
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      await jsm.streams.info(name);
      return true;
    } catch (err) {
      if (!isStreamNotFound(err)) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, 50 * (attempt + 1)));
  }
  return false;
}

/**
 * The large-body bucket. One made by an earlier build in memory is made again on file: a
 * memory stream does not survive a restart of a single nats-server, and the services can no
 * longer make it again themselves. What it held (bodies in transit, kept ten minutes) is
 * lost then: a request carrying one fails with `unavailable`.
 */
async function ensureLargeBucket(bus: Bus, replicas: number, log: Logger): Promise<'created' | 'replaced' | 'unchanged'> {
  const jsm = await bus.jsm();
  let existing: StorageType | undefined;
  try {
    existing = (await jsm.streams.info(LARGE_BUCKET_STREAM)).config.storage;
  } catch (err) {
    if (!isStreamNotFound(err)) throw err;
  }
  if (existing === LARGE_BUCKET_STORAGE) return 'unchanged';
  if (existing !== undefined) {
    log.warn({ bucket: LARGE_BUCKET, storage: existing }, 'large-body bucket made again on file storage; bodies in transit in it are lost');
    await jsm.streams.delete(LARGE_BUCKET_STREAM);
  }
  await new Objm(bus.js).create(LARGE_BUCKET, { ttl: nanos(LARGE_TTL_MS), storage: LARGE_BUCKET_STORAGE, replicas });
  return existing === undefined ? 'created' : 'replaced';
}

export interface ProvisionOptions {
  log: Logger;
  /** Replicas of the streams and the bucket it creates (JETSTREAM_REPLICAS: 3 on a cluster). */
  replicas?: number;
  /** The durables to make (default: every service's, DURABLES). */
  durables?: readonly DurableSpec[];
}

/**
 * Makes JetStream what the services need, in one step, as an administrative NATS user:
 * the EVENTS and DEADLETTER streams, the large-body bucket, every durable consumer with its
 * subject and settings, and no retired durable (RETIRED_DURABLES). Safe to run again and
 * from several processes at once; run it before the services of a new build start, so a
 * new durable exists before the replica that pulls it.
 */
export async function provisionJetStream(bus: Bus, opts: ProvisionOptions): Promise<void> {
  const { log } = opts;
  const replicas = opts.replicas ?? 1;
  const jsm = await bus.jsm();
  for (const stream of STREAMS) {
    const did = await ensureStream(jsm, stream, replicas);
    log.debug({ stream: stream.name, did }, 'stream provisioned');
  }
  const bucket = await ensureLargeBucket(bus, replicas, log);
  log.debug({ bucket: LARGE_BUCKET, did: bucket }, 'bucket provisioned');
  for (const spec of opts.durables ?? DURABLES) {
    const did = await ensureDurable(jsm, spec);
    if (did !== 'unchanged') log.info({ durable: spec.durable, filterSubject: spec.filterSubject, did }, 'durable consumer provisioned');
  }
  for (const durable of Object.values(RETIRED_DURABLES).flat()) {
    try {
      if (await jsm.consumers.delete(STREAM_EVENTS, durable)) log.info({ durable }, 'retired durable consumer deleted');
    } catch (err) {
      // Not there (a new deployment, or deleted by an earlier run): nothing to do.
      if (!isConsumerNotFound(err)) throw err;
    }
  }
}

/**
 * At a service's start: the streams and the bucket it uses exist. Without this a missing
 * EVENTS would only show as publishes nobody acknowledges.
 */
export async function requireProvisioned(bus: Bus): Promise<void> {
  const jsm = await bus.jsm();
  for (const stream of [...STREAMS.map((s) => s.name), LARGE_BUCKET_STREAM]) {
    try {
      await jsm.streams.info(stream);
    } catch (err) {
      if (isStreamNotFound(err)) throw new JetStreamNotProvisioned(`the JetStream stream ${stream} does not exist: ${PROVISIONING_HINT}`);
      throw err;
    }
  }
}

/**
 * At a consumer's start: its durable, as provisioned. Missing, or with another subject than
 * the one its service declares (a build newer than the last provisioning), it stops the start.
 */
export async function provisionedDurable(bus: Bus, durable: string, filterSubject: string): Promise<ConsumerInfo> {
  let info: ConsumerInfo;
  try {
    info = await (await bus.jsm()).consumers.info(STREAM_EVENTS, durable);
  } catch (err) {
    if (isConsumerNotFound(err) || isStreamNotFound(err))
      throw new JetStreamNotProvisioned(`the durable consumer ${durable} does not exist on ${STREAM_EVENTS}: ${PROVISIONING_HINT}`);
    throw err;
  }
  if (info.config.filter_subject !== filterSubject) {
    throw new JetStreamNotProvisioned(
      `the durable consumer ${durable} takes ${info.config.filter_subject ?? 'every subject'}, this build declares ${filterSubject}: ${PROVISIONING_HINT}`,
    );
  }
  return info;
}
