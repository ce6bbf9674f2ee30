'use strict';
const { ensureInstalled, ensureBuilt } = require('./bootstrap');
ensureInstalled();
if (!process.env.ADMIN_SKIP_BUILD) ensureBuilt();
require('../dist/admin').main(process.argv.slice(2)).catch((err) => {
  console.error(err && err.message ? err.message : err);
  process.exit(1);
});
