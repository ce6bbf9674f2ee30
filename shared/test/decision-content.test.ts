import { describe, expect, it } from '@jest/globals';
import { CONTENT_LIMITS, cutText, decisionContentHtml, decisionContentOf, decisionContentText, safeLink, valueText } from '../src';

describe('decisionContentOf: what reviewers see, on every surface', () => {
  const d = {
    id: 'dec_1',
    context: {
      title: 'Deploy api',
      prompt: 'Ship 1.2.3?',
      aiReasoning: 'Canary green for 30 minutes.',
      data: { service: 'api', version: { value: '1.2.3', src: 'ci' }, limits: { cpu: 2, mem: [1, 2] }, ok: true, none: null },
      sourceUrl: 'https://ci.example.com/run/7',
      blocks: [
        { kind: 'diff', title: 'Config', before: 'a', after: 'b' },
        { kind: 'tool_call', tool: 'kubectl', args: { ns: 'prod' } },
      ],
    },
    proposedOutput: { title: 'Notes', content: 'Release notes' },
    expiresAt: '2026-12-01T00:00:00.000Z',
    policy: 'deploys',
    policyName: 'Production deploys',
    policyVersion: 3,
  };

  it('takes every field: data as rows (enriched values with their source, nested as JSON), the source, the blocks, the output, deadline, policy', () => {
    const c = decisionContentOf(d);
    expect(c.title).toBe('Deploy api');
    expect(c.question).toEqual({ text: 'Ship 1.2.3?', cut: false });
    expect(c.reasoning).toEqual({ text: 'Canary green for 30 minutes.', cut: false });
    expect(c.data).toEqual([
      { label: 'service', value: { text: 'api', cut: false }, source: null },
      { label: 'version', value: { text: '1.2.3', cut: false }, source: 'ci' },
      { label: 'limits', value: { text: '{"cpu":2,"mem":[1,2]}', cut: false }, source: null },
      { label: 'ok', value: { text: 'true', cut: false }, source: null },
      { label: 'none', value: { text: 'null', cut: false }, source: null },
    ]);
    expect(c.source).toEqual({ text: 'https://ci.example.com/run/7', href: 'https://ci.example.com/run/7' });
    expect(c.blocks.map((b) => [b.kind, b.title, b.lines.map((l) => [l.label, l.value.text])])).toEqual([
      [
        'diff',
        'Config',
        [
          ['Before', 'a'],
          ['After', 'b'],
        ],
      ],
      [
        'tool_call',
        'Tool call',
        [
          ['Tool', 'kubectl'],
          ['Arguments', '{"ns":"prod"}'],
        ],
      ],
    ]);
    expect(c.output).toEqual({ title: 'Notes', format: 'text', content: { text: 'Release notes', cut: false } });
    expect(c.deadline).toBe('2026-12-01T00:00:00.000Z');
    expect(c.policy).toEqual({ key: 'deploys', name: 'Production deploys', version: 3 });
    expect(c.more).toEqual({ data: 0, blocks: 0 });
  });

  it('cuts long values visibly and counts what does not fit, never dropping silently', () => {
    expect(cutText('abcdef', 4)).toEqual({ text: 'abc…', cut: true });
    expect(cutText('abc', 4)).toEqual({ text: 'abc', cut: false });
    // Never half a surrogate pair.
    expect(cutText('ab😀cd', 4).text).toBe('ab…');
    const many = { id: 'd', context: { data: Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`k${i}`, 'v'.repeat(400)])) } };
    const c = decisionContentOf(many, CONTENT_LIMITS.chat);
    expect(c.data).toHaveLength(10);
    expect(c.data[0]!.value).toEqual({ text: `${'v'.repeat(149)}…`, cut: true });
    expect(c.more).toEqual({ data: 4, blocks: 0 });
    expect(decisionContentText(c).join('\n')).toContain('… and 4 more data fields: open the decision in the app to see them.');
  });

  it('a link only for http(s); anything else is text', () => {
    expect(safeLink('javascript:alert(1)')).toEqual({ text: 'javascript:alert(1)', href: null });
    expect(safeLink('data:text/html,x')).toEqual({ text: 'data:text/html,x', href: null });
    expect(safeLink('HTTPS://x.example/a b')).toEqual({ text: 'HTTPS://x.example/a b', href: null });
    expect(safeLink(undefined)).toBeNull();
    expect(valueText(undefined)).toBe('');
  });

  it('the HTML renderer escapes everything, a <script> in data stays text', () => {
    const out = decisionContentHtml(
      decisionContentOf({ id: 'x', context: { title: '<b>t</b>', aiReasoning: '<script>r()</script>', data: { '<i>k</i>': '<script>alert(1)</script>' } } }),
    ).value;
    expect(out).not.toMatch(/<script|<b>|<i>/);
    expect(out).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(out).toContain('Why this is asked');
    expect(out).toContain('&lt;i&gt;k&lt;/i&gt;');
    expect(out).toContain('No policy');
  });
});
