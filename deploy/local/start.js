'use strict';
const { ensureInstalled, ensureBuilt } = require('./bootstrap');
ensureInstalled();
ensureBuilt();
require('../dist/start').main().catch((err) => {
  console.error(err && err.message ? err.message : err);
  process.exit(1);
});
