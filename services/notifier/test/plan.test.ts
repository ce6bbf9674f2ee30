import { describe, expect, it } from '@jest/globals';
import type { ResolvedApprover } from '@approvals/shared';
import { escalationTarget, initialTargets, orderedTargets, pushTargets, retryDelayMs, withPersonalChannels } from '../src/domain/plan';
import { renderChatNotice, renderEmail } from '../src/templates/messages';

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
    output: null,
    proposedOutput: null,
    policy: null,
    policyName: null,
    policyVersion: null,
    expiresAt: '2026-11-22T10:00:00.000Z',
  } as never;

  it('renders subject, escaped HTML, the blocks and links', () => {
    const m = renderEmail({ d: base, kind: 'notify', links: { approve: 'https://x/a', reject: 'https://x/r' }, appUrl: 'https://x/app/decisions/dec_1' });
    expect(m.subject).toBe('Approval needed: Ship <v2>');
    expect(m.html).toContain('Ship &lt;v2&gt;');
    expect(m.html).not.toContain('<v2>');
    expect(m.text).toContain('  Env: prod');
    expect(m.text).toContain('Approve: https://x/a');
    expect(m.text).toContain('Open until 2026-11-22T10:00:00.000Z');
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

  it('shows the reasoning, the data as a table (nested as JSON, cut visibly), the source, the output and the policy, all escaped', () => {
    const d = {
      ...(base as object),
      context: {
        title: 'Deploy',
        aiReasoning: 'The canary is <b>green</b>.',
        data: { service: '<script>alert(1)</script>', version: { value: '1.2.3', src: 'ci' }, limits: { cpu: 2 }, log: 'x'.repeat(5000) },
        sourceUrl: 'javascript:alert(1)',
      },
      proposedOutput: { content: 'Release notes <i>here</i>' },
      policy: 'deploys',
      policyName: 'Production deploys',
      policyVersion: 3,
    } as never;
    const m = renderEmail({ d, kind: 'notify', appUrl: 'https://x/app' });
    expect(m.html).toContain('Why this is asked');
    expect(m.html).toContain('The canary is &lt;b&gt;green&lt;/b&gt;.');
    expect(m.html).toMatch(/<th[^>]*>service<\/th><td[^>]*>&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    expect(m.html).not.toContain('<script>');
    expect(m.html).toContain('1.2.3 <small');
    expect(m.html).toContain('{&quot;cpu&quot;:2}');
    expect(m.html).toContain(`${'x'.repeat(999)}…`);
    expect(m.html).not.toContain('x'.repeat(1000));
    // Not http(s): text, never a link.
    expect(m.html).not.toContain('href="javascript');
    expect(m.html).toContain('javascript:alert(1)');
    expect(m.html).toContain('Release notes &lt;i&gt;here&lt;/i&gt;');
    expect(m.html).toContain('Policy Production deploys (v3)');
    expect(m.text).toContain('Why this is asked:\nThe canary is <b>green</b>.');
    expect(m.text).toContain('service: <script>alert(1)</script>');
    expect(m.text).toContain('version: 1.2.3 (ci)');
    expect(m.text).toContain('limits: {"cpu":2}');
    expect(m.text).toContain('Source: javascript:alert(1)');
    expect(m.text).toContain('Policy: Production deploys (v3)');
  });
});

describe('chat notice content', () => {
  const d = {
    id: 'dec_9',
    status: 'PENDING',
    context: {
      title: 'Refund',
      prompt: 'Refund $40?',
      aiReasoning: 'Asked twice.',
      data: { order: 42 },
      blocks: [{ kind: 'fields', fields: [{ label: 'Order', value: '42' }] }],
    },
    expiresAt: null,
    output: null,
    proposedOutput: null,
    policy: 'refunds',
    policyName: 'Refunds',
    policyVersion: 2,
    answerableByLink: true,
    linkAnswers: ['approve', 'reject'],
  } as never;
  it('carries the content (the one view model, cut for chat) and the buttons decisions allows', () => {
    const n = renderChatNotice(d, 'remind', 'https://app/x');
    expect(n).toMatchObject({ kind: 'remind', heading: 'Reminder: ', buttons: ['approve', 'reject'], appUrl: 'https://app/x' });
    expect(n.content).toMatchObject({
      title: 'Refund',
      question: { text: 'Refund $40?', cut: false },
      reasoning: { text: 'Asked twice.', cut: false },
      data: [{ label: 'order', value: { text: '42', cut: false }, source: null }],
      blocks: [{ kind: 'fields', title: 'Details', lines: [{ label: 'Order', value: { text: '42', cut: false } }] }],
      policy: { key: 'refunds', name: 'Refunds', version: 2 },
      deadline: null,
      signature: null,
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
    expect(signed.content.signature).toEqual({ document: { text: 'https://sign/e', href: 'https://sign/e' } });
    expect(renderChatNotice({ ...(d as object), answerableByLink: false, linkAnswers: ['reject'] } as never, 'notify', 'u').buttons).toEqual(['reject']);
  });
});
