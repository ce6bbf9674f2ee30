'use strict';
/** Docker HEALTHCHECK: the service's /livez on METRICS_PORT answers 200. */
const http = require('node:http');
const port = Number(process.env.METRICS_PORT || 9464);
const req = http.get({ host: '127.0.0.1', port, path: '/livez', timeout: 2000 }, (res) => {
  res.resume();
  process.exit(res.statusCode === 200 ? 0 : 1);
});
req.on('timeout', () => req.destroy());
req.on('error', () => process.exit(1));
