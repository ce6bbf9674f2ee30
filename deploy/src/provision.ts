import { AuthorizationError, PermissionViolationError } from '@nats-io/nats-core';
import { Bus, JetStreamNotProvisioned, provisionJetStream, type Logger, type NatsAuth } from '@approvals/shared';

/**
 * The administrative NATS user the provisioning step runs as, from the environment:
 * NATS_ADMIN_USER and NATS_ADMIN_PASSWORD, or a `.creds` file in NATS_ADMIN_CREDS. Neither:
 * the credentials in NATS_URL, or none (a server without authorization).
 */
export function natsAdminAuthFromEnv(env: NodeJS.ProcessEnv = process.env): NatsAuth | undefined {
  if (env.NATS_ADMIN_CREDS) return { credsFile: env.NATS_ADMIN_CREDS };
  if (env.NATS_ADMIN_USER) return { user: env.NATS_ADMIN_USER, pass: env.NATS_ADMIN_PASSWORD };
  return undefined;
}

/** JETSTREAM_REPLICAS: replicas of the streams and the bucket the provisioning step creates. */
export function jetstreamReplicasFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.JETSTREAM_REPLICAS ?? '1';
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 5) throw new Error(`JETSTREAM_REPLICAS must be 1 to 5 (got ${JSON.stringify(raw)})`);
  return n;
}

/**
 * Provisions JetStream (bus/jetstream.ts) as the administrative user, once the servers
 * answer: a NATS cluster that is still forming (its JetStream has no leader yet) is waited
 * for, up to `timeoutMs`. Credentials or permissions refused, or a durable that cannot be
 * made as declared, fail at once: waiting would not change them.
 */
export async function provisionWhenReady(opts: { url: string; auth?: NatsAuth; replicas?: number; log: Logger; timeoutMs?: number }): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (let attempt = 1; ; attempt++) {
    let bus: Bus | undefined;
    try {
      bus = await Bus.connect({ url: opts.url, name: 'jetstream-provisioning', log: opts.log, auth: opts.auth });
      await provisionJetStream(bus, { log: opts.log, replicas: opts.replicas });
      opts.log.info({ replicas: opts.replicas ?? 1 }, 'JetStream provisioned: streams, bucket and durable consumers');
      return;
    } catch (err) {
      // A durable found with another subject: a mistake in the declarations, not a wait.
      if (err instanceof JetStreamNotProvisioned) throw err;
      const refused =
        err instanceof AuthorizationError ||
        err instanceof PermissionViolationError ||
        /authorization|permissions violation/i.test(String((err as Error)?.message));
      if (refused)
        throw new Error(
          `JetStream provisioning refused: ${(err as Error).message} (it runs as an administrative NATS user: NATS_ADMIN_USER/NATS_ADMIN_PASSWORD or NATS_ADMIN_CREDS)`,
        );
      if (Date.now() > deadline) throw new Error(`JetStream could not be provisioned: ${(err as Error)?.message ?? String(err)}`);
      opts.log.warn({ attempt, err: (err as Error)?.message }, 'JetStream not available yet; provisioning again shortly');
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      await bus?.close().catch(() => undefined);
    }
  }
}
