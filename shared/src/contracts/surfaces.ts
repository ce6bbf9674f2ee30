import { z } from 'zod';
import { SUBJECT } from '../subjects';
import { endpoint } from './endpoint';

/**
 * Email action links. The notifier asks surfaces for links to put in a mail; each link
 * carries a signed token bound to one decision, one approver and one action, valid until
 * the decision expires, usable once.
 */
export const MintLinksRequest = z.object({
  org: z.string(),
  decisionId: z.string(),
  approverEmail: z.string(),
  actions: z.array(z.enum(['approve', 'reject'])).min(1),
  /** Tokens expire with the decision; null = no expiry of the decision (links then last 30 days). */
  expiresAt: z.string().nullable(),
});
export const MintLinksReply = z.object({ links: z.record(z.string(), z.string()) });

export const SurfacesEndpoints = {
  mintLinks: endpoint(SUBJECT.surfaces.mintLinks, MintLinksRequest, MintLinksReply),
};
