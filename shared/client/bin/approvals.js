#!/usr/bin/env node
'use strict';
// A committed shim, so npm links the `approvals` bin at install time even in a fresh
// clone, before `tsc -b` has written dist/ (npm skips bins whose file is missing).
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const cli = join(__dirname, '..', 'dist', 'cli.js');
if (!existsSync(cli)) {
  process.stderr.write('approvals: the client is not built yet (no dist/cli.js). Run `npm start` or `npx tsc -b` in the repository first.\n');
  process.exit(1);
}
require(cli);
