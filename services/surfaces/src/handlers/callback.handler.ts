import { endpoint, RawCallback, RawHttpReply, SUBJECT, type RawCallback as RawCallbackT, type RawHttpReply as RawHttpReplyT } from '@approvals/shared';

export const CallbackEndpoint = endpoint(SUBJECT.surfaces.callback, RawCallback, RawHttpReply);

export type CallbackRoute = (req: RawCallbackT) => Promise<RawHttpReplyT>;

const json = (status: number, body: unknown): RawHttpReplyT => ({ status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/**
 * Inbound callbacks arrive as raw bytes plus headers (the gateway does not parse them),
 * so each route can verify its provider's signature over the exact body. Every callback
 * route the gateway forwards here has its handler; one this service does not serve (a
 * gateway of another release) is answered 404 `not_found`, never a fake acknowledgement.
 */
export function createCallbackHandler(routes: Record<string, CallbackRoute>) {
  return async (req: RawCallbackT): Promise<RawHttpReplyT> => {
    const route = routes[req.route];
    if (!route) return json(404, { error: 'not_found', message: `no callback route ${req.route}` });
    return route(req);
  };
}
