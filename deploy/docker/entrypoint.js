'use strict';
/**
 * The image's entry: `node deploy/docker/entrypoint.js <service>` runs that service
 * (`services/<service>/dist/main.js`), or `migrate` to run every service's migrations,
 * provision JetStream as the NATS admin user (NATS_URL, NATS_ADMIN_USER/NATS_ADMIN_PASSWORD
 * or NATS_ADMIN_CREDS) and exit (the Kubernetes migrations Job, compose's `migrate`). The service replaces this process's role: signals
 * go straight to it (it is required in this process, not spawned). `all-in-one` runs the six
 * services and a nats-server in this container (deploy/docker/all-in-one.js).
 */
const { join } = require('node:path');
const SERVICES = ['gateway', 'decisions', 'policies', 'notifier', 'surfaces', 'scheduler'];
const what = process.argv[2] || process.env.SERVICE;
if (what === 'migrate') {
  require(join(__dirname, '..', 'dist', 'migrate.js'))
    .main()
    .then(() => process.exit(0))
    .catch((err) => {
      console.error(err && err.message ? err.message : err);
      process.exit(1);
    });
} else if (what === 'all-in-one') {
  require(join(__dirname, 'all-in-one.js'));
} else if (SERVICES.includes(what)) {
  process.env.SERVICE = what;
  require(join(__dirname, '..', '..', 'services', what, 'dist', 'main.js'));
} else {
  console.error(`usage: <image> <${SERVICES.join('|')}|migrate|all-in-one> (got ${what === undefined ? 'nothing' : JSON.stringify(what)})`);
  process.exit(2);
}
