import { headers, type NatsConnection } from '@nats-io/nats-core';
import { JsHeaders, StorageType, type JetStreamClient } from '@nats-io/jetstream';
import { Base64UrlPaddedCodec, Objm, type ObjectInfo, type ObjectStore } from '@nats-io/obj';
import { AppError } from '../errors';
import { newId } from '../ids';

/** The JetStream object store bucket that carries request and reply bodies too large for one NATS message. */
export const LARGE_BUCKET = 'bus-large';
/** How long an unread large body is kept (a requester that timed out never reads its reply). */
export const LARGE_TTL_MS = 10 * 60 * 1000;
/**
 * On file: a memory stream does not survive a restart of a single nats-server, and the
 * services cannot make the bucket again (it is provisioned, bus/jetstream.ts). Only bodies
 * over max_payload pass through it.
 */
export const LARGE_BUCKET_STORAGE = StorageType.File;
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
  ) {}

  /** The largest body sent inline. */
  get threshold(): number {
    const max = this.nc.info?.max_payload ?? 1024 * 1024;
    return Math.max(64 * 1024, max - HEADROOM);
  }

  /** The bucket, provisioned before the services start (bus/jetstream.ts); opened once. */
  private bucket(): Promise<ObjectStore> {
    this.store ??= new Objm(this.js).open(LARGE_BUCKET).catch((err: unknown) => {
      this.store = undefined;
      if (/not found/i.test(String((err as Error)?.message))) {
        throw new AppError('unavailable', `the large-body bucket ${LARGE_BUCKET} does not exist (JetStream is not provisioned: docs/operations.md)`);
      }
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
    const found = await os.get(name);
    if (!found) throw new AppError('unavailable', 'a large message body was no longer available (it is kept 10 minutes)');
    // Read, and the reader's verdict (a digest that does not match fails it), together.
    const [, body] = await Promise.all([found.error, readAll(found.data)]);
    // Read once: drop it now rather than at the TTL. A failed drop only leaves it to the TTL.
    await this.drop(found.info).catch(() => undefined);
    return body;
  }

  /**
   * Deletes an object as the object store's own `delete` does, minus the purge of its
   * chunks: purging the bucket's stream is not the services' to do (their NATS users may
   * not, bus/permissions.ts), so its chunks are rolled up into one empty message
   * (`Nats-Rollup: sub`, which the bucket allows), left to the TTL, and its meta says deleted.
   */
  private async drop(info: ObjectInfo): Promise<void> {
    const rollup = headers();
    rollup.set(JsHeaders.RollupHdr, JsHeaders.RollupValueSubject);
    await this.js.publish(`$O.${LARGE_BUCKET}.C.${info.nuid}`, new Uint8Array(0), { headers: rollup });
    const meta = {
      name: info.name,
      bucket: LARGE_BUCKET,
      nuid: info.nuid,
      size: 0,
      chunks: 0,
      digest: '',
      mtime: info.mtime,
      deleted: true,
      options: info.options,
    };
    await this.js.publish(`$O.${LARGE_BUCKET}.M.${Base64UrlPaddedCodec.encode(info.name)}`, JSON.stringify(meta), { headers: rollup });
  }
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (value?.length) parts.push(value);
  }
  return Buffer.concat(parts);
}
