import { z } from 'zod';

/** A request/reply endpoint: subject plus the schemas of both sides, validated at each end. */
export interface EndpointDef<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType> {
  subject: string;
  request: Req;
  reply: Res;
}

export function endpoint<Req extends z.ZodType, Res extends z.ZodType>(subject: string, request: Req, reply: Res): EndpointDef<Req, Res> {
  return { subject, request, reply };
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
