#!/bin/sh
# The official postgres image's start, as far as compose.yaml uses it: a first start makes
# the cluster (POSTGRES_USER with POSTGRES_PASSWORD, database POSTGRES_DB), then the server
# runs in the foreground with the arguments given (a leading `postgres` is dropped).
set -eu
BIN=/usr/lib/postgresql/15/bin
PGDATA=${PGDATA:-/var/lib/postgresql/data}
[ "${1:-}" = postgres ] && shift
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" >"$pw"
  "$BIN/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" -A scram-sha-256 >/dev/null
  rm -f "$pw"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  "$BIN/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  PGPASSWORD=$POSTGRES_PASSWORD "$BIN/createdb" -h /var/run/postgresql -U "$POSTGRES_USER" "$POSTGRES_DB"
  "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/var/run/postgresql "$@"
