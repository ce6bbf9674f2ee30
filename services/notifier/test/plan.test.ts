import { describe, expect, it } from '@jest/globals';
import type { ResolvedApprover } from '@approvals/shared';
import { escalationTarget, initialTargets, orderedTargets, pushTargets, retryDelayMs, withPersonalChannels } from '../src/domain/plan';
import { renderChatNotice, renderEmail, summarizeBlock } from '../src/templates/messages';

const approver = (over: Partial<ResolvedApprover> = {}): ResolvedApprover => ({
  email: 'ann@example.com',
  approverId: 'apr_1',
  registered: true,
  disabled: false,
  channels: [
    { channel: 'email', endpoint: 'ann@example.com', status: 'verified', verifiedAt: null },
    { channel: 'sms', endpoint: '+15550100', status: 'verified', verifiedAt: null },
    { channel: 'webhook', endpoint: 'https://hooks.example.com/ann', status: 'pending', verifiedAt: null },
    { channel: 'chatA', endpoint: 'U123', status: 'verified', verifiedAt: null },
  ],
  methods: [],
  ...over,
});

describe('delivery planning', () => {
  it('uses only verified channels; a route that names channels is followed, in its order', () => {
    expect(orderedTargets(approver(), { channels: ['sms', 'email'] })).toEqual([
      { channel: 'sms', target: '+15550100' },
      { channel: 'email', target: 'ann@example.com' },
    ]);
    expect(orderedTargets(approver(), null).map((t) => t.channel)).toEqual(['email', 'sms', 'chatA']);
    // Nobody is left unreachable: with none of the route's channels, every channel they have.
    expect(orderedTargets(approver(), { channels: ['chatB'] }).map((t) => t.channel)).toEqual(['email', 'sms', 'chatA']);
  });

  it("a person's own contact methods become their channels; push goes to each active device", () => {
    const p = { sms: '+15550999', devices: ['dev_1', 'dev_2'] };
    expect(orderedTargets(withPersonalChannels(approver(), p), null)).toEqual([
      { channel: 'email', target: 'ann@example.com' },
      { channel: 'chatA', target: 'U123' },
      { channel: 'sms', target: '+15550999' },
    ]);
    expect(pushTargets(approver(), p)).toEqual([
      { channel: 'push', target: 'dev_1' },
      { channel: 'push', target: 'dev_2' },
    ]);
    expect(pushTargets(approver({ disabled: true }), p)).toEqual([]);
    expect(withPersonalChannels(approver(), undefined)).toEqual(approver());
  });

  it('fans out to every verified channel, or starts escalation with the first', () => {
    expect(initialTargets(approver(), null, 'fanout').map((t) => t.channel)).toEqual(['email', 'sms', 'chatA']);
    expect(initialTargets(approver(), { channels: ['chatA', 'email'], strategy: 'escalate', escalateAfterSec: 60 }, 'escalate')).toEqual([
      { channel: 'chatA', target: 'U123' },
    ]);
    expect(escalationTarget(approver(), { channels: ['chatA', 'email'], strategy: 'escalate' }, 1)).toEqual({ channel: 'email', target: 'ann@example.com' });
    expect(escalationTarget(approver(), { channels: ['chatA', 'email'], strategy: 'escalate' }, 9)).toBeUndefined();
  });

  it('skips a disabled approver entirely', () => {
    expect(initialTargets(approver({ disabled: true }), null, 'fanout')).toEqual([]);
    expect(escalationTarget(approver({ disabled: true }), null, 1)).toBeUndefined();
  });

  it('backs off exponentially with a cap', () => {
    // Half fixed, half random ("equal jitter"): between exp/2 and exp.
    expect([1, 2, 3, 4].map((a) => retryDelayMs(a, 1000, undefined, () => 1))).toEqual([1000, 2000, 4000, 8000]);
    expect([1, 2, 3, 4].map((a) => retryDelayMs(a, 1000, undefined, () => 0))).toEqual([500, 1000, 2000, 4000]);
    expect(retryDelayMs(40, 1000, undefined, () => 1)).toBe(600_000);
    for (let i = 0; i < 50; i++) {
      const d = retryDelayMs(3, 1000);
      expect(d).toBeGreaterThanOrEqual(2000);
      expect(d).toBeLessThanOrEqual(4000);
    }
  });
});

describe('email content', () => {
  const base = {
    id: 'dec_1',
    status: 'PENDING',
    context: { title: 'Ship <v2>', prompt: 'Deploy now?', blocks: [{ kind: 'fields', fields: [{ label: 'Env', value: 'prod' }] }] },
    responseSpec: null,
    requiresSignature: false,
    esign: null,
    expiresAt: '2026-11-22T10:00:00.000Z',
  } as never;

  it('renders subject, escaped HTML, summarized blocks and links', () => {
    const m = renderEmail({ d: base, kind: 'notify', links: { approve: 'https://x/a', reject: 'https://x/r' }, appUrl: 'https://x/app/decisions/dec_1' });
    expect(m.subject).toBe('Approval needed: Ship <v2>');
    expect(m.html).toContain('Ship &lt;v2&gt;');
    expect(m.html).not.toContain('<v2>');
    expect(m.text).toContain('- Env: prod');
    expect(m.text).toContain('Approve: https://x/a');
    expect(renderEmail({ d: base, kind: 'remind', appUrl: 'u' }).subject).toBe('Reminder: Ship <v2>');
  });

  it('escapes every value it puts in the HTML, links and prompt included', () => {
    const d = {
      ...(base as object),
      context: { title: 't', prompt: '<img src=x onerror=alert(1)>', blocks: [{ kind: 'text', text: '<script>x</script>' }] },
    } as never;
    const m = renderEmail({ d, kind: 'notify', links: { approve: 'https://x/a?b="><svg>' }, appUrl: 'https://x/app' });
    expect(m.html).not.toMatch(/<img|<script|<svg/);
    expect(m.html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(m.html).toContain('href="https://x/a?b=&quot;&gt;&lt;svg&gt;"');
    // Nothing renders for what is absent: no reject button, no signature line.
    expect(m.html).not.toContain('Reject');
    expect(m.html).not.toContain('signing');
  });

  it('summarizes each block kind in one line', () => {
    expect(summarizeBlock({ kind: 'diff', before: 'a', after: 'b' })).toBe('change: a → b');
    expect(summarizeBlock({ kind: 'tool_call', tool: 'refund', args: { id: 1 } })).toBe('tool refund {"id":1}');
    expect(summarizeBlock({ kind: 'ai_output', model: 'm', output: 'x'.repeat(400) })).toHaveLength(3 + 300 + 1);
  });
});

describe('chat notice content', () => {
  const d = {
    id: 'dec_9',
    status: 'PENDING',
    context: { title: 'Refund', prompt: 'Refund $40?', blocks: [{ kind: 'fields', fields: [{ label: 'Order', value: '42' }] }] },
    expiresAt: null,
    answerableByLink: true,
    linkAnswers: ['approve', 'reject'],
  } as never;
  it('carries title, question, key context and the buttons decisions allows', () => {
    expect(renderChatNotice(d, 'remind', 'https://app/x')).toEqual({
      kind: 'remind',
      heading: 'Reminder: ',
      title: 'Refund',
      question: 'Refund $40?',
      lines: ['Order: 42'],
      buttons: ['approve', 'reject'],
      appUrl: 'https://app/x',
      expiresAt: null,
    });
    const signed = renderChatNotice(
      {
        ...(d as object),
        answerableByLink: false,
        linkAnswers: [],
        requiresSignature: true,
        esign: { envelopeId: 'e', documentUrl: 'https://sign/e' },
      } as never,
      'notify',
      'u',
    );
    expect(signed.buttons).toEqual([]);
    expect(signed.lines.at(-1)).toBe('Decided by signing the document: https://sign/e');
    expect(renderChatNotice({ ...(d as object), answerableByLink: false, linkAnswers: ['reject'] } as never, 'notify', 'u').buttons).toEqual(['reject']);
  });
});
