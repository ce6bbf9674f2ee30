import { Writable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { BaseServiceEnv, ConfigError, createLogger, loadConfig, redactUrl } from '@approvals/shared';

describe('logger and LOG_LEVEL', () => {
  it('a logger with an unknown level still starts (at info), so the configuration can name the bad variable', () => {
    expect(createLogger('t', 'loud').level).toBe('info');
    expect(createLogger('t', 'debug').level).toBe('debug');
    const env = { DATABASE_URL: 'postgres://x@127.0.0.1/x', NATS_URL: 'nats://127.0.0.1:4222', LOG_LEVEL: 'loud' };
    expect(() => loadConfig(BaseServiceEnv, env)).toThrow(ConfigError);
    expect(() => loadConfig(BaseServiceEnv, env)).toThrow(/LOG_LEVEL/);
  });
});

describe('redactUrl: the one redaction of URLs in logs', () => {
  it.each([
    ['/v1/decisions/dec_1?token=link-secret&x=1', '/v1/decisions/dec_1?token=[redacted]&x=1'],
    ['/app/callback?code=oauth-code&state=oauth-state', '/app/callback?code=[redacted]&state=[redacted]'],
    ['/mcp?access_token=at-secret', '/mcp?access_token=[redacted]'],
    ['https://hooks.example.com/in?id_token=a&refresh_token=b&page=2', 'https://hooks.example.com/in?id_token=[redacted]&refresh_token=[redacted]&page=2'],
    [
      'https://s3.example.com/o?X-Amz-Credential=c&X-Amz-Signature=s&X-Amz-Expires=60',
      'https://s3.example.com/o?X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]&X-Amz-Expires=60',
    ],
    [
      '/x?api_key=k&apiKey=k&client_secret=s&password=p&sig=s&session=s',
      '/x?api_key=[redacted]&apiKey=[redacted]&client_secret=[redacted]&password=[redacted]&sig=[redacted]&session=[redacted]',
    ],
    ['/x?access%5Ftoken=escaped', '/x?access%5Ftoken=[redacted]'],
    ['https://app.example.com/cb#access_token=frag&token_type=bearer', 'https://app.example.com/cb#access_token=[redacted]&token_type=[redacted]'],
    ['https://user:hunter2@example.com/path?ok=1', 'https://user:[redacted]@example.com/path?ok=1'],
    ['/v1/decisions?status=PENDING&limit=10', '/v1/decisions?status=PENDING&limit=10'],
    ['/v1/decisions/dec_1', '/v1/decisions/dec_1'],
    ['/x?token', '/x?token'],
  ])('%s is logged as %s', (url, logged) => {
    expect(redactUrl(url)).toBe(logged);
  });

  it('every logger made by createLogger writes `url` and `req.url` fields redacted', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = createLogger('t', 'info', sink);
    log.info({ url: 'https://engine.example.com/hook?token=tk-secret' }, 'one');
    log.info({ req: { method: 'GET', url: '/app/callback?code=c-secret&state=s-secret' } }, 'two');
    log.warn({ err: new Error('boom') }, 'three');
    const [one, two, three] = lines.map((l) => JSON.parse(l));
    expect(one.url).toBe('https://engine.example.com/hook?token=[redacted]');
    expect(two.req).toEqual({ method: 'GET', url: '/app/callback?code=[redacted]&state=[redacted]' });
    expect(three.err).toMatchObject({ message: 'boom', type: 'Error' });
    expect(lines.join('')).not.toMatch(/tk-secret|c-secret|s-secret/);
  });
});
