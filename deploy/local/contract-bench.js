'use strict';
const { ensureInstalled, ensureBuilt } = require('./bootstrap');
ensureInstalled();
ensureBuilt();
require('../dist/contract-bench').main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err && err.stack ? err.stack : err);
    process.exit(1);
  },
);
