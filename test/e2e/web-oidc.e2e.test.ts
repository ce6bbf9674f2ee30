import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, createSign, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { startStack, type Stack } from '../helpers/stack';

// Sign-in to the web app through an OpenID Connect provider: authorization code + PKCE
// (S256) in the browser, the ID token then being the session the gateway verifies with
// the provider's JWKS. The provider is a local stand-in speaking the real protocol.

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

describe('web app: OIDC sign-in', () => {
  let idp: Server;
  let issuer: string;
  let stack: Stack;
  let browser: Browser;
  const clientId = 'approvals-web';
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const codes = new Map<string, { challenge: string; redirectUri: string }>();
  const grants: Array<Record<string, string>> = [];
  let org = '';

  function idToken(): string {
    const now = Math.floor(Date.now() / 1000);
    const header = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: 'k1' }));
    const payload = b64url(
      JSON.stringify({ iss: issuer, aud: clientId, sub: 'user_oidc_1', email: 'olive@example.com', org, role: 'member', iat: now, exp: now + 600 }),
    );
    const sig = createSign('RSA-SHA256').update(`${header}.${payload}`).sign(privateKey);
    return `${header}.${payload}.${b64url(sig)}`;
  }

  beforeAll(async () => {
    idp = createServer((req, res) => {
      const url = new URL(req.url ?? '/', issuer);
      const cors = {
        'access-control-allow-origin': '*',
        'access-control-allow-headers': 'content-type, authorization, dpop',
        'access-control-allow-methods': 'GET, POST',
      };
      if (req.method === 'OPTIONS') return void res.writeHead(204, cors).end();
      if (url.pathname === '/.well-known/openid-configuration') {
        return void res.writeHead(200, { 'content-type': 'application/json', ...cors }).end(
          JSON.stringify({
            issuer,
            authorization_endpoint: `${issuer}/authorize`,
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}/jwks`,
            response_types_supported: ['code'],
            subject_types_supported: ['public'],
            id_token_signing_alg_values_supported: ['RS256'],
            code_challenge_methods_supported: ['S256'],
          }),
        );
      }
      if (url.pathname === '/jwks') {
        return void res
          .writeHead(200, { 'content-type': 'application/json', ...cors })
          .end(JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' }] }));
      }
      if (url.pathname === '/authorize') {
        // The person "signs in" at once: back to the app with a code bound to the PKCE challenge.
        const code = randomBytes(12).toString('hex');
        codes.set(code, { challenge: url.searchParams.get('code_challenge') ?? '', redirectUri: url.searchParams.get('redirect_uri') ?? '' });
        const back = new URL(url.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state') ?? '');
        back.searchParams.set('iss', issuer);
        return void res.writeHead(302, { location: back.toString() }).end();
      }
      if (url.pathname === '/token' && req.method === 'POST') {
        let raw = '';
        req.on('data', (c) => (raw += c));
        req.on('end', () => {
          const form = Object.fromEntries(new URLSearchParams(raw));
          grants.push(form);
          const c = codes.get(form.code ?? '');
          const ok =
            c &&
            c.redirectUri === form.redirect_uri &&
            b64url(
              createHash('sha256')
                .update(form.code_verifier ?? '')
                .digest(),
            ) === c.challenge &&
            form.client_id === clientId;
          if (!ok) return void res.writeHead(400, { 'content-type': 'application/json', ...cors }).end(JSON.stringify({ error: 'invalid_grant' }));
          codes.delete(form.code!);
          res
            .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store', ...cors })
            .end(JSON.stringify({ access_token: 'at', token_type: 'Bearer', expires_in: 600, id_token: idToken() }));
        });
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => idp.listen(0, '127.0.0.1', r));
    issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    stack = await startStack({
      label: 'oidc',
      services: ['gateway', 'decisions', 'policies'],
      env: { AUTH_OIDC_ISSUER: issuer, AUTH_OIDC_CLIENT_ID: clientId, AUTH_JWKS_URL: `${issuer}/jwks`, AUTH_JWT_ISSUER: issuer, AUTH_JWT_AUDIENCE: clientId },
    });
    ({ org } = await stack.newOrg());
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await new Promise<void>((r) => idp?.close(() => r()));
  });

  it('signs in with authorization code + PKCE, and the ID token is the session the API accepts', async () => {
    expect(((await (await fetch(`${stack.baseUrl}/app/config.json`)).json()) as { oidc: unknown }).oidc).toEqual({
      issuer,
      clientId,
      scope: 'openid email profile',
    });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${stack.baseUrl}/app/usage`);
    await page.waitForURL((u) => u.pathname === '/app/login');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => u.pathname === '/app/usage');
    await page.getByText('olive@example.com').waitFor();
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    expect(grants).toHaveLength(1);
    expect(grants[0]).toMatchObject({ grant_type: 'authorization_code', client_id: clientId, redirect_uri: `${stack.baseUrl}/app/login` });
    expect(grants[0]!.code_verifier!.length).toBeGreaterThanOrEqual(43);
    // The same ID token works on the API as a session (verified with the provider's keys).
    const res = await stack.http('GET', '/v1/usage/current', { token: idToken() });
    expect(res.status).toBe(200);
    expect(errors).toEqual([]);
    await page.close();
  });
});
