import { expect } from '@jest/globals';
import type { HttpResult } from '../../../test/helpers/stack';

/** Body of a 400 from schema validation: the spec error body with issues. */
export function expectInvalid(res: HttpResult, path?: string, message?: RegExp) {
  expect(res.status).toBe(400);
  expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String), issues: expect.any(Array) });
  expect(res.body.issues.length).toBeGreaterThan(0);
  for (const issue of res.body.issues) expect(issue).toEqual({ path: expect.any(String), message: expect.any(String) });
  if (path) {
    const hit = res.body.issues.find((i: { path: string }) => i.path === path);
    expect({ issues: res.body.issues, found: Boolean(hit) }).toEqual({ issues: res.body.issues, found: true });
    if (message) expect(hit.message).toMatch(message);
  }
}

/** A spec error body with exactly `error` and a non-empty `message` (plus details). */
export function expectError(res: HttpResult, status: number, error: string, details: Record<string, unknown> = {}) {
  expect({ status: res.status, error: res.body?.error }).toEqual({ status, error });
  expect(typeof res.body.message).toBe('string');
  expect(res.body.message.length).toBeGreaterThan(0);
  expect(res.body).toMatchObject(details);
}

let seq = 0;
/** A key unique within the test file. */
export const uniqueKey = (label: string) => `${label}-${Date.now().toString(36)}-${++seq}`;

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
