import { html, rawHtml } from '@approvals/shared';
import type { RenderedEmail } from './messages';

const ROLE_TEXT: Record<string, string> = {
  admin: 'an admin',
  editor: 'an editor',
  member: 'a member',
  reviewer: 'a reviewer (your inbox and the decisions naming you)',
};

/**
 * The mail holding a single-use sign-in link (docs/access.md, "Sign-in by email link"):
 * asked for on the sign-in page, or sent with a member invitation. It says which org and
 * role the link opens, when it stops working, and that ignoring it is safe.
 */
export function renderSignInMail(args: {
  org: string;
  role: string;
  purpose: 'sign_in' | 'invitation';
  link: string;
  expiresAt: Date;
  invitedBy?: string | null;
}): RenderedEmail {
  const role = ROLE_TEXT[args.role] ?? args.role;
  const until = `${args.expiresAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const invite = args.purpose === 'invitation';
  const subject = (invite ? `You were added to ${args.org} in Approvals` : `Your sign-in link for ${args.org}`).slice(0, 250);
  const lead = invite
    ? `${args.invitedBy ?? 'An admin'} added you to the organisation ${args.org} as ${role}.`
    : `Someone (we hope you) asked to sign in to the organisation ${args.org}, where you are ${role}.`;
  const text = [
    lead,
    '',
    `Sign in: ${args.link}`,
    '',
    `The link works once, until ${until}. After that, ask for a new one on the sign-in page.`,
    invite ? '' : 'If you did not ask for it, ignore this mail: nothing happens without the link.',
  ]
    .filter((l, i, all) => l !== '' || all[i - 1] !== '')
    .join('\n');
  const body = html`${rawHtml('<!doctype html>')}<html><body style="font:15px/1.5 system-ui,sans-serif;color:#1d1d1f;max-width:640px">
<h2 style="margin:0 0 8px">${invite ? `Welcome to ${args.org}` : `Sign in to ${args.org}`}</h2>
<p>${lead}</p>
<p><a href="${args.link}" style="display:inline-block;padding:10px 18px;background:#0b57d0;color:#fff;border-radius:6px;text-decoration:none">Sign in</a></p>
<p style="color:#666">The link works once, until ${until}. After that, ask for a new one on the sign-in page.${invite ? '' : ' If you did not ask for it, ignore this mail: nothing happens without the link.'}</p>
</body></html>`;
  return { subject, text, html: body.value };
}
