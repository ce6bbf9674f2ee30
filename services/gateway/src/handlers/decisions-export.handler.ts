import { DecisionsEndpoints, type Bus, type DecisionsExportQuery } from '@approvals/shared';
import type { LocalRequest, LocalResult } from '../http/route';

/** Rows the decisions service reads and renders for one chunk of the export. */
export const EXPORT_CHUNK_ROWS = 500;

/**
 * `GET /v1/decisions/export.csv`: the list's filtered set as CSV, of any size. The gateway
 * asks the decisions service for one chunk at a time (a keyset cursor over PostgreSQL, a
 * bus request/reply each: a chunk too large for one NATS message takes the bus's
 * large-body path) and writes it out before asking for the next, so it holds one chunk,
 * never the whole set. The reviewer's scope is the service's, as for the list.
 */
export function decisionsExportHandler(bus: Bus) {
  return async (req: LocalRequest<unknown, DecisionsExportQuery>): Promise<LocalResult> => {
    async function* chunks(): AsyncGenerator<string> {
      let after: string | undefined;
      do {
        const reply = await bus.call(DecisionsEndpoints.exportChunk, {
          requestId: req.requestId,
          principal: req.principal,
          org: req.org,
          params: {},
          query: { ...req.query, size: EXPORT_CHUNK_ROWS, ...(after === undefined ? {} : { after }) },
          body: undefined,
        });
        yield reply.csv;
        after = reply.next ?? undefined;
      } while (after !== undefined);
    }
    const day = new Date().toISOString().slice(0, 10);
    return { body: null, stream: { contentType: 'text/csv; charset=utf-8', filename: `decisions-${day}.csv`, chunks: chunks() } };
  };
}
