import { describe, expect, it } from '@jest/globals';
import { escapeHtml, html, rawHtml } from '../src/html';

describe('the html tag', () => {
  it('escapes every interpolated value, in content and in attributes', () => {
    const evil = '"><script>alert(1)</script>&';
    expect(html`<a href="${evil}">${evil}</a>`.value).toBe(`<a href="${escapeHtml(evil)}">${escapeHtml(evil)}</a>`);
    expect(html`<p>${evil}</p>`.value).not.toContain('<script>');
  });

  it('nests fragments and arrays of fragments without escaping them twice', () => {
    const items = ['a<b', 'c&d'].map((x) => html`<li>${x}</li>`);
    expect(html`<ul>${items}</ul>`.value).toBe('<ul><li>a&lt;b</li><li>c&amp;d</li></ul>');
  });

  it('renders nothing for false, null and undefined, and numbers as text', () => {
    const show = false;
    expect(html`<p>${show && html`<b>x</b>`}${null}${undefined}${0}</p>`.value).toBe('<p>0</p>');
  });

  it('lets only a trusted constant through unescaped', () => {
    expect(html`${rawHtml('<!doctype html>')}<b>${'<i>'}</b>`.value).toBe('<!doctype html><b>&lt;i&gt;</b>');
  });
});
