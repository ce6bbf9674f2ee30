import type { NatsConnection } from '@nats-io/nats-core';
import { nanos } from '@nats-io/nats-core';
import { StorageType, type JetStreamClient } from '@nats-io/jetstream';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { AppError } from '../errors';
import { newId } from '../ids';

/** The JetStream object store bucket that carries request and reply bodies too large for one NATS message. */
export const LARGE_BUCKET = 'bus-large';
/** How long an unread large body is kept (a requester that timed out never reads its reply). */
export const LARGE_TTL_MS = 10 * 60 * 1000;
/** Room left under the server's max_payload for headers and protocol. */
const HEADROOM = 32 * 1024;
const MARKER = new TextEncoder().encode('{"$large":"');

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Request/reply bodies of any size. NATS refuses a message over the server's
 * `max_payload` (1 MiB by default): a decision with a large context, a page of them, or a
 * callback body near the HTTP limit would not fit. Such a body is put in the object
 * store (chunked by JetStream) and the message carries `{"$large": "<name>"}`; the
 * receiver reads it and deletes it. Small bodies, nearly all of them, go as they are.
 */
export class LargePayloads {
  private store?: Promise<ObjectStore>;

  constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly replicas = 1,
  ) {}

  /** The largest body sent inline. */
  get threshold(): number {
    const max = this.nc.info?.max_payload ?? 1024 * 1024;
    return Math.max(64 * 1024, max - HEADROOM);
  }

  private bucket(): Promise<ObjectStore> {
    this.store ??= new Objm(this.js).create(LARGE_BUCKET, { ttl: nanos(LARGE_TTL_MS), storage: StorageType.Memory, replicas: this.replicas }).catch((err: unknown) => {
      this.store = undefined;
      throw err;
    });
    return this.store;
  }

  /** The bytes to send: the body itself, or a reference to it in the object store. */
  async wrap(body: Uint8Array): Promise<Uint8Array> {
    if (body.length <= this.threshold) return body;
    const name = newId('blob');
    await (await this.bucket()).putBlob({ name }, body);
    return enc.encode(JSON.stringify({ $large: name }));
  }

  /** The body a message stands for. */
  async unwrap(data: Uint8Array): Promise<Uint8Array> {
    // Every message passes here: compare bytes, decode only a marker.
    if (data.length > 200 || data.length < MARKER.length || MARKER.some((b, i) => data[i] !== b)) return data;
    const text = dec.decode(data);
    const name = (JSON.parse(text) as { $large?: unknown }).$large;
    if (typeof name !== 'string') return data;
    const os = await this.bucket();
    const body = await os.getBlob(name);
    if (!body) throw new AppError('unavailable', 'a large message body was no longer available (it is kept 10 minutes)');
    // Read once: drop it now rather than at the TTL. A failed delete only leaves it to the TTL.
    await os.delete(name).catch(() => undefined);
    return body;
  }
}
