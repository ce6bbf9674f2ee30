import { describe, expect, it } from '@jest/globals';
import { BaseServiceEnv, ConfigError, createLogger, loadConfig } from '@approvals/shared';

describe('logger and LOG_LEVEL', () => {
  it('a logger with an unknown level still starts (at info), so the configuration can name the bad variable', () => {
    expect(createLogger('t', 'loud').level).toBe('info');
    expect(createLogger('t', 'debug').level).toBe('debug');
    const env = { DATABASE_URL: 'postgres://x@127.0.0.1/x', NATS_URL: 'nats://127.0.0.1:4222', LOG_LEVEL: 'loud' };
    expect(() => loadConfig(BaseServiceEnv, env)).toThrow(ConfigError);
    expect(() => loadConfig(BaseServiceEnv, env)).toThrow(/LOG_LEVEL/);
  });
});
