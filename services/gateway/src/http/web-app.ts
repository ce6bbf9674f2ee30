import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import express, { type Express } from 'express';

/** Where `npm start` / `npm test` build the web app (services/gateway/web/dist). */
export const WEB_DIST_DIR = resolve(__dirname, '..', '..', 'web', 'dist');

/**
 * The web app at `/app/`: hashed assets cached for a year, every other path the app's
 * index (it routes in the browser). It calls only the public REST API, with the
 * session token it holds; `/app/config.json` tells it how to sign in (OIDC or not).
 */
export function mountWebApp(app: Express, opts: { dir?: string; oidc?: { issuer: string; clientId: string; scope: string } }): void {
  const dir = opts.dir ?? WEB_DIST_DIR;
  const index = join(dir, 'index.html');
  const csp = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    `connect-src 'self'${opts.oidc ? ` ${new URL(opts.oidc.issuer).origin}` : ''}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join('; ');
  app.get('/app/config.json', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json({ oidc: opts.oidc ?? null });
  });
  app.use('/app/assets', express.static(join(dir, 'assets'), { immutable: true, maxAge: '365d', index: false, fallthrough: false }));
  app.get(/^\/app(\/.*)?$/, (_req, res) => {
    if (!existsSync(index)) {
      res.status(503).type('text').send('The web app is not built: `npm start` builds it (or run `npm run build:web`).');
      return;
    }
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(readFileSync(index));
  });
}
