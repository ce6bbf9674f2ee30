import { describe, expect, it } from '@jest/globals';
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import {
  BROWSER_BINDING_COOKIE,
  CONTENT_LIMITS,
  ManualClock,
  browserBindingCookie,
  browserBindingHash,
  browserMatches,
  browserNonceOf,
  decisionContentOf,
  newBrowserNonce,
} from '@approvals/shared';
import {
  INSTALL_STATE_TTL_MS,
  buttonChoice,
  decisionOfCustomId,
  discordCustomId,
  discordSignatureValid,
  emailOfTarget,
  newInstallState,
  signInstallState,
  slackSignatureValid,
  verifyInstallState,
} from '../src/domain/chat';
import {
  discordAnnounce,
  discordNotice,
  discordRejectModal,
  discordOutcome,
  discordPrivately,
  discordTestMessage,
  slackAnnounce,
  slackEscape,
  slackNotice,
  slackRejectModal,
  slackOutcome,
  slackPrivately,
  slackTestMessage,
  slackVoteReply,
} from '../src/templates/chat';

// Pure rules of the chat surfaces, on an injected clock.

const SECRET = 'a-secret-of-some-length';

describe('install state', () => {
  it('is bound to the org and provider, signed, and valid for 10 minutes', () => {
    const clock = new ManualClock(new Date('2026-11-24T12:00:00Z'));
    const s = newInstallState('org_1', 'chatA', clock.now());
    const value = signInstallState(SECRET, s);
    expect(verifyInstallState(SECRET, value, 'chatA', clock.now())).toEqual({ ok: true, state: s });
    expect(verifyInstallState(SECRET, value, 'chatB', clock.now())).toEqual({ ok: false, reason: 'wrong_provider' });
    expect(verifyInstallState('another-secret-entirely', value, 'chatA', clock.now())).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyInstallState(SECRET, 'garbage', 'chatA', clock.now())).toEqual({ ok: false, reason: 'malformed' });
    // A payload edited to another org does not carry a valid signature.
    const [payload, sig] = value.split('.');
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), o: 'org_2' })).toString('base64url');
    expect(verifyInstallState(SECRET, `${forged}.${sig}`, 'chatA', clock.now()).ok).toBe(false);
    clock.advance(INSTALL_STATE_TTL_MS - 1);
    expect(verifyInstallState(SECRET, value, 'chatA', clock.now()).ok).toBe(true);
    clock.advance(1);
    expect(verifyInstallState(SECRET, value, 'chatA', clock.now())).toEqual({ ok: false, reason: 'expired' });
  });

  it('names its purpose: an install state is no link state, and the other way round', () => {
    const now = new Date('2026-11-24T12:00:00Z');
    const install = signInstallState(SECRET, newInstallState('org_1', 'chatB', now));
    const link = newInstallState('org_1', 'chatB', now, 'link');
    expect(verifyInstallState(SECRET, install, 'chatB', now, 'link')).toEqual({ ok: false, reason: 'wrong_purpose' });
    expect(verifyInstallState(SECRET, signInstallState(SECRET, link), 'chatB', now)).toEqual({ ok: false, reason: 'wrong_purpose' });
    expect(verifyInstallState(SECRET, signInstallState(SECRET, link), 'chatB', now, 'link')).toEqual({ ok: true, state: link });
  });
});

describe('browser binding', () => {
  it('matches only the cookie whose nonce the state stored the hash of', () => {
    const nonce = newBrowserNonce();
    const stored = browserBindingHash(nonce);
    expect(stored).toMatch(/^[0-9a-f]{64}$/);
    expect(browserMatches(`other=1; ${BROWSER_BINDING_COOKIE}=${nonce}; x=y`, stored)).toBe(true);
    expect(browserMatches(`${BROWSER_BINDING_COOKIE}=${newBrowserNonce()}`, stored)).toBe(false);
    expect(browserMatches(undefined, stored)).toBe(false);
    expect(browserMatches(`${BROWSER_BINDING_COOKIE}=${nonce}`, null)).toBe(false);
    // The hash itself in the cookie is not the nonce.
    expect(browserMatches(`${BROWSER_BINDING_COOKIE}=${stored}`, stored)).toBe(false);
    expect(browserNonceOf(`${BROWSER_BINDING_COOKIE}=short`)).toBeUndefined();
    expect(browserBindingCookie(nonce, false)).toBe(`${BROWSER_BINDING_COOKIE}=${nonce}; Path=/v1/integrations/; Max-Age=600; HttpOnly; SameSite=Lax`);
    expect(browserBindingCookie(nonce, true)).toMatch(/; Secure$/);
  });
});

describe('request signatures', () => {
  const now = new Date('2026-11-24T12:00:00Z');
  const ts = Math.floor(now.getTime() / 1000);
  const slackHeaders = (body: string, t = ts, secret = SECRET) => ({
    'x-slack-request-timestamp': String(t),
    'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${t}:${body}`).digest('hex')}`,
  });

  it('Slack v0: the exact raw body, within 300 s either way', () => {
    const body = 'payload=%7B%7D';
    expect(slackSignatureValid(SECRET, slackHeaders(body), body, now)).toBe(true);
    expect(slackSignatureValid(SECRET, slackHeaders(body), `${body}&x=1`, now)).toBe(false);
    expect(slackSignatureValid(SECRET, slackHeaders(body, ts, 'wrong-secret'), body, now)).toBe(false);
    expect(slackSignatureValid(SECRET, slackHeaders(body, ts - 300), body, now)).toBe(true);
    expect(slackSignatureValid(SECRET, slackHeaders(body, ts - 301), body, now)).toBe(false);
    expect(slackSignatureValid(SECRET, slackHeaders(body, ts + 301), body, now)).toBe(false);
    expect(slackSignatureValid(SECRET, {}, body, now)).toBe(false);
    expect(slackSignatureValid(SECRET, { 'x-slack-request-timestamp': 'soon', 'x-slack-signature': 'v0=00' }, body, now)).toBe(false);
  });

  it('Discord Ed25519 over timestamp + body, within 300 s', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const hex = (publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(12).toString('hex');
    const body = Buffer.from('{"type":1}');
    const headers = (t = ts, b = body) => ({
      'x-signature-timestamp': String(t),
      'x-signature-ed25519': sign(null, Buffer.concat([Buffer.from(String(t)), b]), privateKey).toString('hex'),
    });
    expect(discordSignatureValid(hex, headers(), body, now)).toBe(true);
    expect(discordSignatureValid(hex, headers(), Buffer.from('{"type":2}'), now)).toBe(false);
    expect(discordSignatureValid(hex, headers(ts - 301), body, now)).toBe(false);
    const other = (generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(12).toString('hex');
    expect(discordSignatureValid(other, headers(), body, now)).toBe(false);
    expect(discordSignatureValid(hex, { 'x-signature-timestamp': String(ts), 'x-signature-ed25519': 'zz' }, body, now)).toBe(false);
  });
});

describe('buttons and targets', () => {
  it('reads approve/reject from action and custom ids, and the decision from a custom id', () => {
    expect(buttonChoice('approve')).toBe('approve');
    expect(buttonChoice('reject_1')).toBe('reject');
    expect(buttonChoice('open_in_app')).toBeNull();
    expect(buttonChoice(undefined)).toBeNull();
    expect(discordCustomId('approve', 'dec_1')).toBe('approve:dec_1');
    expect(decisionOfCustomId('approve:dec_1')).toBe('dec_1');
    expect(decisionOfCustomId('approve')).toBeNull();
    expect(decisionOfCustomId('approve:dec 1')).toBeNull();
    expect(emailOfTarget('email:a@x.com')).toBe('a@x.com');
    expect(emailOfTarget('U123')).toBeNull();
  });

  it('renders buttons only for the answers a click can give: none on a signature decision', () => {
    const notice = {
      kind: 'notify' as const,
      heading: 'Approval needed: ',
      content: decisionContentOf({ id: 'dec_1', context: { title: 'Sign <it>', prompt: 'a & b', data: { x: '<y>' } } }, CONTENT_LIMITS.chat),
      buttons: [] as Array<'approve' | 'reject'>,
      appUrl: 'https://app/x',
    };
    const signed = slackNotice(notice, 'dec_1');
    const actions = signed.blocks!.find((b) => b.type === 'actions') as { elements: Array<{ action_id: string }> };
    expect(actions.elements.map((e) => e.action_id)).toEqual(['open_in_app']);
    expect(JSON.stringify(signed.blocks)).toContain('a &amp; b');
    expect(slackEscape('<@U1> & <!channel>')).toBe('&lt;@U1&gt; &amp; &lt;!channel&gt;');
    const both = discordNotice({ ...notice, buttons: ['approve', 'reject'] }, 'dec_1');
    expect((both.components![0]!.components as Array<{ custom_id?: string }>).map((c) => c.custom_id)).toEqual(['approve:dec_1', 'reject:dec_1', undefined]);
  });

  it('no message built here can ping: Slack texts escaped (plain_text is never parsed), Discord messages with allowed_mentions none', () => {
    const evil = '@everyone <!channel> <@U123> <#C1> <!subteam^S1|team> & co';
    const notice = {
      kind: 'notify' as const,
      heading: 'Approval needed: ',
      content: decisionContentOf(
        {
          id: 'dec_1',
          context: {
            title: evil,
            prompt: evil,
            aiReasoning: evil,
            data: { [evil]: evil, nested: { x: evil } },
            sourceUrl: evil,
            blocks: [{ kind: 'fields', title: evil, fields: [{ label: evil, value: evil }] }],
          },
          proposedOutput: { title: evil, content: evil },
          policy: 'p',
          policyName: evil,
          policyVersion: 1,
          expiresAt: evil,
        },
        CONTENT_LIMITS.chat,
      ),
      buttons: ['approve' as const],
      appUrl: 'https://app/x',
    };
    const slack = [
      slackNotice(notice, 'dec_1'),
      slackOutcome(evil, 'APPROVED', evil, 'https://app/x'),
      slackAnnounce(evil, [evil], 'https://app/x'),
      slackVoteReply(evil, 'approve', { approvals: 1, approvalsRequired: 1, rejections: 0, rejectionsRequired: 1 }),
      slackPrivately(evil),
      slackTestMessage,
    ];
    const parsed = (m: { text: string; blocks?: unknown[] }) => {
      const out = [m.text];
      JSON.stringify(m.blocks ?? [], (_k, v) => {
        if (v && typeof v === 'object' && (v as { type?: string }).type === 'mrkdwn') out.push((v as { text: string }).text);
        return v;
      });
      return out;
    };
    for (const m of slack) for (const t of parsed(m)) expect(t).not.toMatch(/<[!@#]/);
    expect(parsed(slackNotice(notice, 'dec_1')).join()).toContain('&lt;!channel&gt; &lt;@U123&gt; &lt;#C1&gt; &lt;!subteam^S1|team&gt; &amp; co');
    const discord = [
      discordNotice(notice, 'dec_1'),
      discordOutcome(evil, 'REJECTED', evil, 'https://app/x'),
      discordAnnounce(evil, [evil], 'https://app/x'),
      discordTestMessage,
      discordPrivately(evil).data,
    ];
    for (const m of discord) expect(m.allowed_mentions).toEqual({ parse: [] });
    // Discord: every text it parses shows the mention syntax as typed (backslash-escaped), and @ cannot read as a mention.
    const embed = discordNotice(notice, 'dec_1').embeds![0] as { description: string; fields: Array<{ name: string; value: string }> };
    for (const t of [embed.description, ...embed.fields.flatMap((f) => [f.name, f.value])]) {
      expect(t).not.toMatch(/(^|[^\\])<[@#!]/);
      expect(t).not.toMatch(/@everyone/);
    }
    const modal = slackRejectModal({ decisionId: 'dec_1', title: evil, required: true });
    for (const t of parsed({ text: '', blocks: modal.blocks })) expect(t).not.toMatch(/<[!@#]/);
  });

  it('a notice shows the content on both platforms: reasoning, data, a source link only when http(s), the policy, cut values marked', () => {
    const content = decisionContentOf(
      {
        id: 'dec_2',
        context: {
          title: 'Deploy api',
          aiReasoning: 'The canary is green.',
          data: { service: 'api', version: { value: '1.2.3', src: 'ci' }, log: 'y'.repeat(500) },
          sourceUrl: 'https://ci.example.com/run/1',
        },
        policy: 'deploys',
        policyName: 'Deploys',
        policyVersion: 4,
        expiresAt: '2026-12-01T00:00:00.000Z',
      },
      CONTENT_LIMITS.chat,
    );
    const n = { kind: 'notify' as const, heading: 'Approval needed: ', content, buttons: ['approve' as const, 'reject' as const], appUrl: 'https://app/x' };
    const slackText = JSON.stringify(slackNotice(n, 'dec_2').blocks);
    expect(slackText).toContain('*Why this is asked*\\nThe canary is green.');
    expect(slackText).toContain('*service*\\napi');
    expect(slackText).toContain('*version*\\n1.2.3 _(ci)_');
    expect(slackText).toContain(`${'y'.repeat(149)}…`);
    expect(slackText).toContain('<https://ci.example.com/run/1|https://ci.example.com/run/1>');
    expect(slackText).toContain('Policy: Deploys (v4) · Open until 2026-12-01T00:00:00.000Z');
    const embed = discordNotice(n, 'dec_2').embeds![0] as { description: string; fields: Array<{ name: string; value: string }>; footer: { text: string } };
    expect(embed.description).toBe('**Why this is asked**\nThe canary is green.');
    expect(embed.fields).toEqual(
      expect.arrayContaining([
        { name: 'service', value: 'api', inline: true },
        { name: 'Source', value: '[https://ci.example.com/run/1](https://ci.example.com/run/1)', inline: false },
      ]),
    );
    expect(embed.footer.text).toBe('Policy: Deploys (v4) · Open until 2026-12-01T00:00:00.000Z');
    const unsafe = decisionContentOf({ id: 'd', context: { sourceUrl: 'javascript:alert(1)' } }, CONTENT_LIMITS.chat);
    expect(unsafe.source).toEqual({ text: 'javascript:alert(1)', href: null });
    expect(JSON.stringify(slackNotice({ ...n, content: unsafe }, 'd').blocks)).not.toContain('<javascript');
  });

  it('Reject asks for the reason: the Slack modal and the Discord modal (type 9), required under requireRejectNote', () => {
    const m = slackRejectModal({ decisionId: 'dec_1', title: 'T', required: true });
    expect(m).toMatchObject({ type: 'modal', callback_id: 'reject_reason', private_metadata: JSON.stringify({ decisionId: 'dec_1' }) });
    expect(m.blocks[1]).toMatchObject({
      type: 'input',
      block_id: 'reason',
      optional: false,
      element: { type: 'plain_text_input', action_id: 'note', max_length: 4000 },
    });
    expect(slackRejectModal({ decisionId: 'dec_1', title: 'T', required: false }).blocks[1]).toMatchObject({ optional: true });
    const d = discordRejectModal({ decisionId: 'dec_1', title: 'T', required: true });
    expect(d).toMatchObject({
      type: 9,
      data: { custom_id: 'reject_note:dec_1', components: [{ type: 1, components: [{ type: 4, custom_id: 'note', required: true }] }] },
    });
    expect(buttonChoice(d.data.custom_id)).toBe('reject');
    expect(decisionOfCustomId(d.data.custom_id)).toBe('dec_1');
  });
});
