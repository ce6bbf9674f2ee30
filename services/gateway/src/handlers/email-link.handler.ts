import { z } from 'zod';
import { Email, UserRole } from '@approvals/shared';
import type { EmailLinks } from '../auth/email-link';
import type { LocalRequest, LocalResult } from '../http/route';

export const EmailLinkBody = z.strictObject({
  email: Email,
  next: z
    .string()
    .max(500)
    .optional()
    .describe('Where the app goes after sign-in: a path inside the app (`/app/…`, same origin), carried in the link as `next`; anything else is dropped'),
});
export const EmailLinkSent = z.object({ sent: z.literal(true) });
export const RedeemBody = z.strictObject({ code: z.string().min(1).max(200).describe('the `code` of the link `{PUBLIC_BASE_URL}/app/login?code=…`') });
export const Redeemed = z.object({
  sessionToken: z.string().describe('a session JWT (HS256) for `Authorization: Bearer`'),
  org: z.string(),
  email: z.string(),
  role: UserRole.describe("the person's role in the org: a member's role, or `reviewer` for an approver who is no member"),
});

/** `/v1/auth/email-link` (no authentication): ask for a sign-in link, and redeem one. */
export function emailLinkHandlers(links: EmailLinks) {
  return {
    async request(req: LocalRequest<z.infer<typeof EmailLinkBody>>): Promise<LocalResult> {
      await links.request({ email: req.body.email, ip: req.ip ?? 'unknown', next: req.body.next });
      return { status: 202, body: { sent: true } };
    },
    async redeem(req: LocalRequest<z.infer<typeof RedeemBody>>): Promise<LocalResult> {
      return { body: await links.redeem(req.body.code) };
    },
  };
}
