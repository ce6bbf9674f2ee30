import { describe, expect, it } from '@jest/globals';
import { createServer } from 'node:net';
import { ephemeralPortRange, freePort } from '../src/infra';

describe('freePort', () => {
  it('gives ports below the range the kernel takes outgoing connections’ local ports from, each one free to listen on', async () => {
    const [low, high] = ephemeralPortRange();
    expect(low).toBeGreaterThan(0);
    expect(high).toBeGreaterThanOrEqual(low);
    for (let i = 0; i < 10; i++) {
      const port = await freePort();
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(low);
      const srv = createServer();
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(port, '0.0.0.0', () => resolve());
      });
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    }
  });
});
