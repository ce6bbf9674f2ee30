'use strict';
/**
 * `<image> all-in-one`: the six services as supervised processes (a service that exits is
 * started again with backoff) and a nats-server with JetStream (Debian's binary in the
 * image, on 127.0.0.1 only, a user per service, its store in $APPROVALS_DATA_DIR/nats), in
 * one container; PostgreSQL from DATABASE_URL. The same code as the clustered topology,
 * packed for one host: six processes over NATS. It is `npm start` (deploy/src/start.ts)
 * without the embedded PostgreSQL. Secrets come from the environment (AUTH_JWT_SECRET,
 * SECRETS_KEY, RECEIPT_SIGNING_KEY); any missing one is generated once into
 * $APPROVALS_DATA_DIR/secrets.json, so mount a volume there (compose.small.yaml does).
 * With METRICS_PORT set, the services serve /metrics on METRICS_PORT + their index
 * (gateway, decisions, policies, notifier, surfaces, scheduler).
 */
if (!process.env.DATABASE_URL) {
  console.error('all-in-one needs DATABASE_URL (postgres://user:password@host:5432/db)');
  process.exit(2);
}
process.env.APPROVALS_DATA_DIR = process.env.APPROVALS_DATA_DIR || '/data';
require('../dist/start')
  .main()
  .catch((err) => {
    console.error(err && err.message ? err.message : err);
    process.exit(1);
  });
