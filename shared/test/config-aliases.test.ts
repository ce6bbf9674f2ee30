import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { RENAMED_ENV, loadConfig, withRenamedEnv, withRenamedNames } from '../src/config';

const Schema = z.object({
  SLACK_SIGNING_SECRET: z.string().optional(),
  INNGEST_URL: z.string().url().optional(),
  TEMPORAL_NAMESPACE: z.string().default('default'),
});

function load(env: Record<string, string | undefined>) {
  const warnings: string[] = [];
  const config = loadConfig(Schema, env, { warn: (line) => warnings.push(line) });
  return { config, warnings };
}

describe('renamed environment variables (old names as aliases)', () => {
  it('reads an old name when the new one is absent, with one deprecation line naming both', () => {
    const { config, warnings } = load({ CHAT_A_SIGNING_SECRET: 'old-secret', ENGINE_A_URL: 'http://engine.test' });
    expect(config).toEqual({ SLACK_SIGNING_SECRET: 'old-secret', INNGEST_URL: 'http://engine.test', TEMPORAL_NAMESPACE: 'default' });
    expect(warnings).toEqual([
      'CHAT_A_SIGNING_SECRET is deprecated: rename it to SLACK_SIGNING_SECRET (docs/operations.md "Environment")',
      'ENGINE_A_URL is deprecated: rename it to INNGEST_URL (docs/operations.md "Environment")',
    ]);
  });

  it('the new name wins when both are set, and then nothing is deprecated', () => {
    const { config, warnings } = load({ ENGINE_B_NAMESPACE: 'old', TEMPORAL_NAMESPACE: 'payments' });
    expect(config.TEMPORAL_NAMESPACE).toBe('payments');
    expect(warnings).toEqual([]);
  });

  it('an empty new name counts as unset; an empty old name is not read', () => {
    expect(load({ SLACK_SIGNING_SECRET: '', CHAT_A_SIGNING_SECRET: 's' }).config.SLACK_SIGNING_SECRET).toBe('s');
    const { config, warnings } = load({ ENGINE_B_NAMESPACE: '' });
    expect(config.TEMPORAL_NAMESPACE).toBe('default');
    expect(warnings).toEqual([]);
  });

  it('a bad value under the old name is refused under the name the schema knows', () => {
    expect(() => load({ ENGINE_A_URL: 'not a url' })).toThrow(/INNGEST_URL/);
  });

  it('every old name maps to a provider name, and no name is both old and new', () => {
    const olds = Object.keys(RENAMED_ENV);
    const news = Object.values(RENAMED_ENV);
    expect(olds.every((o) => /^(CHAT_A|CHAT_B|ENGINE_A|ENGINE_B|ENGINE_TRIGGER)_/.test(o))).toBe(true);
    expect(news.every((n) => /^(SLACK|DISCORD|INNGEST|TEMPORAL|TRIGGER)_/.test(n))).toBe(true);
    expect(new Set(news).size).toBe(news.length);
    expect(olds.filter((o) => news.includes(o))).toEqual([]);
  });

  it('a schema wrapped with withRenamedNames reads old names however it is parsed (the test stacks parse directly)', () => {
    const Wrapped = withRenamedNames(Schema);
    expect(Wrapped.parse({ ENGINE_A_URL: 'http://engine.test', INNGEST_URL: undefined })).toEqual({
      INNGEST_URL: 'http://engine.test',
      TEMPORAL_NAMESPACE: 'default',
    });
    expect(Wrapped.parse({ ENGINE_B_NAMESPACE: 'old', TEMPORAL_NAMESPACE: 'new' }).TEMPORAL_NAMESPACE).toBe('new');
  });

  it('leaves the given record alone', () => {
    const env = { CHAT_B_BOT_TOKEN: 't' };
    expect(withRenamedEnv(env).env).toEqual({ CHAT_B_BOT_TOKEN: 't', DISCORD_BOT_TOKEN: 't' });
    expect(env).toEqual({ CHAT_B_BOT_TOKEN: 't' });
  });
});
