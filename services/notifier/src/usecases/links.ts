import { MINT_LINKS_MAX_APPROVERS, SurfacesEndpoints, type Bus } from '@approvals/shared';

/** What a mail's links are for: one decision's approve and reject, as the decision expires. */
export interface LinksFor {
  org: string;
  decisionId: string;
  approverEmail: string;
  expiresAt: string | null;
}

type Links = Record<string, string>;

interface Batch {
  org: string;
  decisionId: string;
  expiresAt: string | null;
  /** Who asked, by approver: each gets the approver's links (or the call's failure). */
  waiting: Map<string, Array<{ resolve(links: Links): void; reject(err: unknown): void }>>;
}

/**
 * Email action links, minted by surfaces (`svc.surfaces.mint_links`). A decision's
 * notices to its approvers are planned together and sent at once, so their mails ask for
 * links in the same moment: those asked in one turn of the event loop for one decision go
 * in one call (`moreApprovers`), which surfaces writes in one statement. One call and one
 * transaction a decision instead of one per approver.
 */
export function createLinkMinter(bus: Bus) {
  const batches = new Map<string, Batch>();

  const callFor = (b: Batch, approverEmail: string, moreApprovers: string[]) =>
    bus.call(SurfacesEndpoints.mintLinks, {
      org: b.org,
      decisionId: b.decisionId,
      approverEmail,
      ...(moreApprovers.length ? { moreApprovers } : {}),
      actions: ['approve', 'reject'],
      expiresAt: b.expiresAt,
    });

  const settle = (b: Batch, email: string, outcome: { links: Links } | { err: unknown }) => {
    for (const w of b.waiting.get(email) ?? []) {
      if ('links' in outcome) w.resolve(outcome.links);
      else w.reject(outcome.err);
    }
  };

  const flush = async (b: Batch) => {
    const emails = [...b.waiting.keys()];
    for (let i = 0; i < emails.length; i += MINT_LINKS_MAX_APPROVERS + 1) {
      const [first, ...more] = emails.slice(i, i + MINT_LINKS_MAX_APPROVERS + 1) as [string, ...string[]];
      let reply: Awaited<ReturnType<typeof callFor>>;
      try {
        reply = await callFor(b, first, more);
      } catch (err) {
        for (const email of [first, ...more]) settle(b, email, { err });
        continue;
      }
      settle(b, first, { links: reply.links });
      // A surfaces replica that predates `moreApprovers` answers for the first alone: the
      // others are asked one by one.
      await Promise.all(
        more.map(async (email) => {
          try {
            settle(b, email, { links: reply.byApprover?.[email] ?? (await callFor(b, email, [])).links });
          } catch (err) {
            settle(b, email, { err });
          }
        }),
      );
    }
  };

  return (at: LinksFor): Promise<Links> => {
    const key = `${at.org}\u0000${at.decisionId}\u0000${at.expiresAt ?? ''}`;
    let b = batches.get(key);
    if (b === undefined) {
      const batch: Batch = { org: at.org, decisionId: at.decisionId, expiresAt: at.expiresAt, waiting: new Map() };
      batches.set(key, batch);
      // The notices of this turn join it; the call goes once they have.
      setImmediate(() => {
        batches.delete(key);
        void flush(batch);
      });
      b = batch;
    }
    const waiting = b.waiting;
    return new Promise<Links>((resolve, reject) => {
      const list = waiting.get(at.approverEmail) ?? [];
      list.push({ resolve, reject });
      waiting.set(at.approverEmail, list);
    });
  };
}
export type MintLinks = ReturnType<typeof createLinkMinter>;
