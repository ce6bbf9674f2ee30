'use strict';
const { ensureInstalled, ensureBuilt } = require('./bootstrap');
ensureInstalled();
ensureBuilt();
require('../dist/cluster').main().catch((err) => {
  console.error(err && err.message ? err.message : err);
  process.exit(1);
});
