import { z } from 'zod';
import { Email, actorLabelOf, actorOf, type Logger, type Principal } from '@approvals/shared';
import { MEMBER_ROLES, toMemberView, type MemberRole, type MembersStore } from '../store/members.store';
import type { LocalRequest, LocalResult } from '../http/route';

const MemberRoleSchema = z.enum(MEMBER_ROLES as [MemberRole, ...MemberRole[]]);

export const MemberIdParams = z.strictObject({ id: z.string().min(1).max(100) });
export const InviteMemberBody = z.strictObject({
  email: Email,
  role: MemberRoleSchema.describe('`admin`, `editor` or `member` (a `reviewer` is an approver who is no member: nothing to invite)'),
});
export const ChangeMemberBody = z.strictObject({ role: MemberRoleSchema });

export const MemberView = z.object({
  id: z.string(),
  email: z.string(),
  role: MemberRoleSchema,
  status: z.enum(['active', 'removed']),
  invitedBy: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  removedAt: z.string().nullable(),
});

const actorOfRequest = (req: { principal: Principal }) => ({ id: actorOf(req.principal), label: actorLabelOf(req.principal) });

/** `/v1/members/` (admin): who belongs to the org, with which role. An invitation mails a sign-in link (`mailInvitation`). */
export function memberHandlers(
  members: MembersStore,
  mailInvitation: (input: { org: string; email: string; role: MemberRole; invitedBy: string }) => Promise<void>,
  log: Logger,
) {
  return {
    async list(req: LocalRequest): Promise<LocalResult> {
      return { body: { members: (await members.list(req.org)).map(toMemberView) } };
    },
    async invite(req: LocalRequest<z.infer<typeof InviteMemberBody>>): Promise<LocalResult> {
      const actor = actorOfRequest(req);
      const row = await members.invite(req.org, req.body.email, req.body.role, actor);
      // The member is in either way: a mail that cannot be handed over now is no reason to
      // refuse the invitation (they can ask for a link on the sign-in page).
      await mailInvitation({ org: req.org, email: row.email, role: row.role, invitedBy: actor.label }).catch((err: unknown) =>
        log.warn({ err, member: row.id }, 'the invitation mail could not be handed to the notifier'),
      );
      return { status: 201, body: toMemberView(row) };
    },
    async change(req: LocalRequest<z.infer<typeof ChangeMemberBody>, unknown, { id: string }>): Promise<LocalResult> {
      return { body: toMemberView(await members.setRole(req.org, req.params.id, req.body.role, actorOfRequest(req))) };
    },
    async remove(req: LocalRequest<unknown, unknown, { id: string }>): Promise<LocalResult> {
      return { body: toMemberView(await members.remove(req.org, req.params.id, actorOfRequest(req))) };
    },
  };
}
