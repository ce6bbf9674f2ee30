import { backoffDelayMs } from '../backoff';
import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/nats-core';
import { EventEnvelope } from '../contracts/common';
import { AppError } from '../errors';
import type { Logger } from '../logger';
import { STREAM_EVENTS } from '../subjects';
import { Bus, decodeJson } from './bus';

/** Thrown by a handler for a message that can never succeed: the message is terminated, not retried. */
export class PoisonMessage extends Error {
  override name = 'PoisonMessage';
}

export interface ConsumerContext {
  /** 1 on first delivery. */
  deliveryCount: number;
  /** Tells JetStream the handler is still working (extends the ack wait). */
  working(): void;
}

export type EventHandler = (event: EventEnvelope, ctx: ConsumerContext) => Promise<void>;

export interface ConsumerOptions {
  bus: Bus;
  log: Logger;
  durable: string;
  filterSubject: string;
  handler: EventHandler;
  maxDeliver?: number;
  ackWaitMs?: number;
  /** Base of the exponential nak delay. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

export function nakDelayMs(deliveryCount: number, baseMs = 500, maxMs = 30_000): number {
  return backoffDelayMs(deliveryCount, { baseMs, maxMs, jitter: false });
}

/**
 * A durable pull consumer on EVENTS shared by every replica of a service (same durable
 * name). Each message is validated, handled, then acked; a passing failure is nak'ed
 * with exponential backoff; a malformed or poison message is terminated and logged so it
 * cannot block the ones behind it.
 */
export class EventConsumer {
  private messages?: ConsumerMessages;
  private loop?: Promise<void>;
  private stopped = false;

  constructor(private readonly opts: ConsumerOptions) {}

  async start(): Promise<void> {
    const { bus, durable, filterSubject } = this.opts;
    const jsm = await bus.jsm();
    const config = {
      durable_name: durable,
      filter_subject: filterSubject,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      max_deliver: this.opts.maxDeliver ?? 50,
      ack_wait: nanos(this.opts.ackWaitMs ?? 30_000),
    };
    try {
      await jsm.consumers.add(STREAM_EVENTS, config);
    } catch (err) {
      // Exists with another configuration (an older build): bring it up to date.
      this.opts.log.info({ err: (err as Error).message, durable }, 'updating consumer configuration');
      await jsm.consumers.update(STREAM_EVENTS, durable, {
        max_deliver: config.max_deliver,
        ack_wait: config.ack_wait,
      });
    }
    const consumer = await bus.js.consumers.get(STREAM_EVENTS, durable);
    this.messages = await consumer.consume({ max_messages: 64 });
    this.loop = this.run(this.messages);
  }

  private async run(messages: ConsumerMessages): Promise<void> {
    for await (const m of messages) {
      await this.handleOne(m);
      if (this.stopped) break;
    }
  }

  private async handleOne(m: JsMsg): Promise<void> {
    const { log, durable, handler } = this.opts;
    const deliveryCount = m.info.deliveryCount;
    let event: EventEnvelope;
    try {
      event = EventEnvelope.parse(decodeJson(m.data));
    } catch (err) {
      log.error({ durable, subject: m.subject, seq: m.seq, err: (err as Error).message }, 'malformed event terminated');
      // No reason argument: nats-server before 2.10 does not recognise "+TERM <reason>",
      // leaves the message pending and redelivers it after ack_wait. The log has the reason.
      m.term();
      return;
    }
    try {
      await handler(event, { deliveryCount, working: () => m.working() });
      m.ack();
    } catch (err) {
      if (err instanceof PoisonMessage) {
        log.error({ durable, eventId: event.id, type: event.type, err: err.message }, 'poison event terminated');
        m.term(); // no reason: see above
        return;
      }
      const delay = nakDelayMs(deliveryCount, this.opts.backoffBaseMs, this.opts.backoffMaxMs);
      const level = err instanceof AppError && err.transient ? 'warn' : 'error';
      log[level]({ durable, eventId: event.id, type: event.type, deliveryCount, delay, err }, 'event handler failed; will redeliver');
      m.nak(delay);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // close() waits for pulls to finish; the loop then sees the end of the iterator.
    await this.messages?.close().catch(() => undefined);
    await this.loop;
  }
}
