import { STREAM_DEADLETTER, deadLetterSubject } from '../subjects';
import { encodeJson, type Bus } from './bus';
import type { DeadLetter } from './consumer';

export interface ParkedEvent extends DeadLetter {
  /** Its sequence in the DEADLETTER stream: what `show`, `replay` and `drop` take. */
  seq: number;
}

/** Dead letters, oldest first (optionally of one durable), at most `limit`. */
export async function listDeadLetters(bus: Bus, opts: { durable?: string; limit?: number } = {}): Promise<ParkedEvent[]> {
  const jsm = await bus.jsm();
  const info = await jsm.streams.info(STREAM_DEADLETTER);
  const out: ParkedEvent[] = [];
  if (info.state.messages === 0) return out;
  const want = opts.durable ? deadLetterSubject(opts.durable) : undefined;
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && out.length < (opts.limit ?? 100); seq++) {
    const m = await jsm.streams.getMessage(STREAM_DEADLETTER, { seq }).catch(() => null);
    if (!m || (want && m.subject !== want)) continue;
    out.push({ ...m.json<DeadLetter>(), seq });
  }
  return out;
}

export async function getDeadLetter(bus: Bus, seq: number): Promise<ParkedEvent | undefined> {
  const jsm = await bus.jsm();
  const m = await jsm.streams.getMessage(STREAM_DEADLETTER, { seq }).catch(() => null);
  return m ? { ...m.json<DeadLetter>(), seq } : undefined;
}

/**
 * Publishes a parked event again on its original subject (after the cause was fixed), then
 * removes it from DEADLETTER. Handlers are idempotent by event id, so consumers that had
 * handled it change nothing; the one that failed gets it again. The republish has its own
 * message id (the original's would be dropped as a duplicate within the stream's window).
 */
export async function replayDeadLetter(bus: Bus, seq: number): Promise<ParkedEvent> {
  const letter = await getDeadLetter(bus, seq);
  if (!letter) throw new Error(`no dead letter ${seq}`);
  let envelope: unknown;
  try {
    envelope = JSON.parse(letter.payload);
  } catch {
    throw new Error(`dead letter ${seq} is not JSON (reason ${letter.reason}): it cannot be replayed; drop it`);
  }
  await bus.js.publish(letter.subject, encodeJson(envelope), { msgID: `${letter.eventId ?? `dlq-${seq}`}:replay:${seq}` });
  await (await bus.jsm()).streams.deleteMessage(STREAM_DEADLETTER, seq);
  return letter;
}

export async function dropDeadLetter(bus: Bus, seq: number): Promise<boolean> {
  return (await bus.jsm()).streams.deleteMessage(STREAM_DEADLETTER, seq);
}
