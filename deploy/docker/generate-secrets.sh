#!/bin/sh
# Writes .env (secrets for compose) and nats/auth.conf (a NATS user per service, with the
# permissions from shared/src/bus/permissions.ts, and admin, which only `migrate` uses to
# provision JetStream). Run from deploy/docker, after
# `npm install && npm run build` at the repository root. Keep both files out of git.
# With a folder as argument, both are written there instead (the container test's copy).
set -eu
out=${1:-$(dirname "$0")}
mkdir -p "$out/nats"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")"
rand() { node -e "process.stdout.write(require('crypto').randomBytes($1).toString('$2'))"; }
users=$(mktemp)
node -e "
const r=(n)=>require('crypto').randomBytes(n).toString('hex');
const names=['gateway','decisions','policies','notifier','surfaces','scheduler','admin'];
process.stdout.write(JSON.stringify(Object.fromEntries(names.map((n)=>[n,{user:n,password:r(18)}]))));
" > "$users"
(cd ../.. && npm run --silent admin -- nats-config --passwords "$users") > "$out/nats/auth.conf"
# (read as JSON: mktemp's name has no .json, so require() would take it for JavaScript)
pw() { node -e "process.stdout.write(JSON.parse(require('fs').readFileSync('$users', 'utf8'))['$1'].password)"; }
cat > "$out/.env" <<ENV
POSTGRES_PASSWORD=$(rand 18 hex)
AUTH_JWT_SECRET=$(rand 32 hex)
SECRETS_KEY=$(rand 32 base64)
RECEIPT_SIGNING_KEY=$(node -e "process.stdout.write(require('crypto').generateKeyPairSync('ed25519').privateKey.export({type:'pkcs8',format:'pem'}).replace(/\\n/g,'\\\\n'))")
NATS_PASSWORD_GATEWAY=$(pw gateway)
NATS_PASSWORD_DECISIONS=$(pw decisions)
NATS_PASSWORD_POLICIES=$(pw policies)
NATS_PASSWORD_NOTIFIER=$(pw notifier)
NATS_PASSWORD_SURFACES=$(pw surfaces)
NATS_PASSWORD_SCHEDULER=$(pw scheduler)
NATS_PASSWORD_ADMIN=$(pw admin)
ENV
rm -f "$users"
echo "wrote $out/.env and $out/nats/auth.conf"
