import { join } from 'node:path';
import { createDb, createLogger, migrate, type Migration } from '@approvals/shared';
import { jetstreamReplicasFromEnv, natsAdminAuthFromEnv, provisionWhenReady } from './provision';

/**
 * Every service's migrations, each under its schema's lock, then JetStream's provisioning
 * (streams, the large-body bucket, every durable consumer; retired durables deleted) as
 * the administrative NATS user, then exit: the Kubernetes migrations Job and compose's
 * `migrate` (`<image> migrate`) run this before a rollout. Services also migrate at start
 * (under the same lock), so a replica never runs against an older schema; they cannot
 * provision JetStream (their NATS users may not) and stop at start if it is not.
 */
const SCHEMAS: Array<{ service: string; schema: string }> = [
  { service: 'gateway', schema: 'access' },
  { service: 'decisions', schema: 'decisions' },
  { service: 'policies', schema: 'policies' },
  { service: 'notifier', schema: 'notifier' },
  { service: 'surfaces', schema: 'surfaces' },
  { service: 'scheduler', schema: 'scheduler' },
];

export async function main(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is required');
  const natsUrl = process.env.NATS_URL;
  if (!natsUrl)
    throw new Error('NATS_URL is required: the migrate step also provisions JetStream (with NATS_ADMIN_USER/NATS_ADMIN_PASSWORD or NATS_ADMIN_CREDS)');
  const replicas = jetstreamReplicasFromEnv();
  const log = createLogger('migrate', process.env.LOG_LEVEL ?? 'info');
  for (const { service, schema } of SCHEMAS) {
    // The compiled migrations of each service (the image holds dist/ only).
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a path known only at run time
    const { migrations } = require(join(__dirname, '..', '..', 'services', service, 'dist', 'migrations', 'index.js')) as { migrations: Migration[] };
    const db = createDb({ url, schema, poolMax: 2, log });
    try {
      await migrate(db, schema, migrations);
      log.info({ schema, migrations: migrations.length }, 'schema up to date');
    } finally {
      await db.destroy();
    }
  }
  await provisionWhenReady({ url: natsUrl, auth: natsAdminAuthFromEnv(), replicas, log });
}
