import { z } from 'zod';

export interface EndpointOptions {
  /**
   * Sending the same request twice has the effect of sending it once (a read, or a write
   * keyed so a repeat finds the first one's result). The bus then resends it once when its
   * holder falls silent (a replica died holding it: no answer and no word of progress for
   * SILENCE_MS), or none was up for a moment (Bus.send).
   */
  idempotent?: boolean;
  /** How long a caller waits for the answer (default: the bus's, 10 s). */
  timeoutMs?: number;
  /** Changes nothing: a service that announces its changes (bus/invalidation) stays silent after it. */
  readOnly?: boolean;
}

/** A request/reply endpoint: subject plus the schemas of both sides, validated at each end. */
export interface EndpointDef<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType> extends EndpointOptions {
  subject: string;
  request: Req;
  reply: Res;
}

/** A write whose requests are safe to resend (keyed so a repeat finds the first one's result). */
export const RESENDABLE: EndpointOptions = { idempotent: true };
/** A read: safe to resend, and a short wait before doing so (a dead replica costs little). */
export const READ: EndpointOptions = { idempotent: true, timeoutMs: 5_000, readOnly: true };

export function endpoint<Req extends z.ZodType, Res extends z.ZodType>(
  subject: string,
  request: Req,
  reply: Res,
  options: EndpointOptions = {},
): EndpointDef<Req, Res> {
  return { subject, request, reply, ...options };
}

/** Wire form of a reply. `status` lets a handler pick the HTTP success code (201 vs 200). */
export const WireReply = z.union([
  z.object({ ok: z.literal(true), status: z.number().int().optional(), data: z.unknown() }),
  z.object({
    ok: z.literal(false),
    error: z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()).default({}) }),
  }),
]);
export type WireReply = z.infer<typeof WireReply>;
