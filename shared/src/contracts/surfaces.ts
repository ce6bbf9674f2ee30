import { z } from 'zod';
import { SUBJECT } from '../subjects';
import { endpoint } from './endpoint';

/**
 * Email action links. The notifier asks surfaces for links to put in a mail; each link
 * carries a signed token bound to one decision, one approver and one action, valid until
 * the decision expires, usable once.
 */
export const MINT_LINKS_MAX_APPROVERS = 100;
export const MintLinksRequest = z.object({
  org: z.string(),
  decisionId: z.string(),
  approverEmail: z.string(),
  /**
   * More approvers of the same decision whose mails go out at the same moment: their
   * links too, in the same statement (`byApprover`). A surfaces replica older than this
   * field ignores it and answers `links` alone; the caller then asks for the others one
   * by one.
   */
  moreApprovers: z.array(z.string()).max(MINT_LINKS_MAX_APPROVERS).optional(),
  actions: z.array(z.enum(['approve', 'reject'])).min(1),
  /** Tokens expire with the decision; null = no expiry of the decision (links then last 30 days). */
  expiresAt: z.string().nullable(),
});
export type MintLinksRequest = z.output<typeof MintLinksRequest>;
export const MintLinksReply = z.object({
  /** `approverEmail`'s links, by action. */
  links: z.record(z.string(), z.string()),
  /** `moreApprovers`' links: by approver (as asked), then by action. */
  byApprover: z.record(z.string(), z.record(z.string(), z.string())).optional(),
});

export const SurfacesEndpoints = {
  mintLinks: endpoint(SUBJECT.surfaces.mintLinks, MintLinksRequest, MintLinksReply),
};
