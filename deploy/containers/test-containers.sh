#!/usr/bin/env bash
# npm run test:containers: the image built and both compose topologies run, with podman.
#   1. the base image (base-image.sh: debootstrap bookworm + this machine's Node.js; kept),
#      the stand-ins for postgres/nats/nginx (Containerfile.infra; kept) and the image
#      (deploy/docker/Dockerfile, BASE_IMAGE = that base; layers and npm's cache kept);
#   2. deploy/docker/compose.yaml (PostgreSQL, 3 NATS nodes, 2 replicas of every service,
#      the balancer) with podman-compose: up, /health, create → vote → verify → consume
#      through the balancer, every container non-root and healthy, then down;
#   3. deploy/docker/compose.small.yaml (`all-in-one` + PostgreSQL): the same, and a
#      service killed inside the container is started again by its supervisor.
# Everything it started is stopped and removed at the end, also on failure. Needs root,
# podman, runc, podman-compose and debootstrap (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export CONTAINERS_CONF="$ROOT/deploy/containers/containers.conf"
t0=$(date +%s)
work=$(mktemp -d /tmp/approvals-containers.XXXXXX)
# Each step is also written to progress.log, and so is what a failing command printed, so
# that a failure ends with where and why it stopped, after the containers' logs.
say() { echo "[containers +$(($(date +%s) - t0))s] $*" | tee -a "$work/progress.log"; }

node_major=$(node -p 'process.versions.node.split(".")[0]')
BASE=${BASE_IMAGE:-localhost/approvals-base:bookworm-node$node_major}
INFRA=localhost/approvals-infra:bookworm
IMAGE=localhost/approvals:local
PROJECT=approvals-ct
SMALL=approvals-ct-small

compose() { podman-compose "$@" >>"$work/compose.log" 2>&1; }
big() { compose -p "$PROJECT" -f "$work/docker/compose.yaml" -f "$work/containers/compose.podman.yaml" "$@"; }
small() { compose -p "$SMALL" -f "$work/docker/compose.small.yaml" -f "$work/containers/compose.small.podman.yaml" "$@"; }
cleanup() {
  local rc=$?
  if [ $rc -ne 0 ]; then
    say "failed; the last of the containers' logs:"
    for c in $(podman ps -a --format '{{.Names}}' | grep -E "^($PROJECT|$SMALL)_" || true); do
      echo "--- $c ($(podman inspect -f '{{.State.Status}} exit={{.State.ExitCode}}' "$c" 2>/dev/null))"
      podman logs --tail 15 "$c" 2>&1 | cut -c1-300 || true
    done
    tail -20 "$work/compose.log" 2>/dev/null || true
    echo "--- where it stopped:"
    tail -8 "$work/progress.log" 2>/dev/null || true
  fi
  [ -f "$work/docker/compose.yaml" ] && big down -v -t 5 || true
  [ -f "$work/docker/compose.small.yaml" ] && small down -v -t 5 || true
  # Whatever compose left (a container it never knew it made, the networks).
  for c in $(podman ps -a --format '{{.Names}}' | grep -E "^($PROJECT|$SMALL)_" || true); do podman rm -f -t 2 "$c" >/dev/null 2>&1 || true; done
  for n in $(podman network ls --format '{{.Name}}' | grep -E "^($PROJECT|$SMALL)_" || true); do podman network rm -f "$n" >/dev/null 2>&1 || true; done
  for v in $(podman volume ls --format '{{.Name}}' | grep -E "^($PROJECT|$SMALL)_" || true); do podman volume rm -f "$v" >/dev/null 2>&1 || true; done
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

node -e "require('./deploy/local/bootstrap').ensureBuilt()" # flow.js uses the built client

# --- images ----------------------------------------------------------------------------
BASE_IMAGE=$BASE deploy/containers/base-image.sh
if ! podman image exists "$INFRA"; then
  say "building $INFRA"
  podman build -q --network host --build-arg BASE_IMAGE="$BASE" -f deploy/containers/Containerfile.infra -t "$INFRA" deploy/containers >/dev/null
fi
say "building $IMAGE (BASE_IMAGE=$BASE)"
# Docker's format keeps the image's HEALTHCHECK (OCI's has none).
podman build -q --format docker --network host --build-arg BASE_IMAGE="$BASE" -f deploy/docker/Dockerfile -t "$IMAGE" . >"$work/build.log" 2>&1 || {
  tail -30 "$work/build.log"
  exit 1
}
podman image prune -f >/dev/null 2>&1 || true
say "images ready"

# The compose files and their secrets in a folder of the test's own (never deploy/docker/.env).
mkdir -p "$work/docker" "$work/containers"
cp -r deploy/docker/compose.yaml deploy/docker/compose.small.yaml deploy/docker/nginx.conf deploy/docker/nats "$work/docker/"
cp deploy/containers/compose.podman.yaml deploy/containers/compose.small.podman.yaml deploy/containers/nginx.podman.conf "$work/containers/"
deploy/docker/generate-secrets.sh "$work/docker" >/dev/null
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
export HTTP_PORT=$port PUBLIC_BASE_URL="http://localhost:$port"
base="http://127.0.0.1:$port"

# Leftovers of an interrupted run.
big down -v -t 2 || true
small down -v -t 2 || true

wait_for() { # <what> <seconds> <command…>
  local what=$1 limit=$2
  shift 2
  local until=$(($(date +%s) + limit))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$until" ] || {
      say "timed out after ${limit}s waiting for $what"
      return 1
    }
    sleep 2
  done
}
healthy_front() { # <expected instances per service>
  node -e "
    fetch('$base/health').then(async (r) => {
      const b = await r.json();
      const ok = r.status === 200 && b.status === 'ok' && Object.values(b.services).filter((s) => s.ok && s.instances >= $1).length === 6;
      process.exit(ok ? 0 : 1);
    }).catch(() => process.exit(1));"
}
admin() { # <container> <args…>: the admin CLI inside a service container
  local c=$1
  shift
  podman exec "$c" node -e "require('/app/deploy/dist/admin').main(process.argv.slice(1)).catch((e)=>{console.error(e.message);process.exit(1)})" "$@"
}
walk() { # <container for the admin CLI>
  local org="org_ci$(date +%s)" approver="approver@ci.example.com"
  local boot key token
  boot=$(admin "$1" bootstrap --org "$org" --email "admin@ci.example.com" 2> >(tee -a "$work/progress.log" >&2))
  key=$(node -p "JSON.parse(process.argv[1]).apiKey" "$boot")
  token=$(admin "$1" session --org "$org" --email "$approver" --role member 2>>"$work/progress.log")
  node deploy/containers/flow.js "$base" "$key" "$token" "$approver" 2> >(tee -a "$work/progress.log" >&2)
}
check_containers() { # <project>: every container non-root; running ones healthy where they have a check
  local c user uid
  for c in $(podman ps -a --format '{{.Names}}' | grep -E "^$1_"); do
    user=$(podman inspect -f '{{.Config.User}}' "$c")
    case "$user" in "" | root | 0 | 0:*) say "$c runs as root (User=${user:-unset})"; return 1 ;; esac
    if [ "$(podman inspect -f '{{.State.Status}}' "$c")" = running ]; then
      uid=$(podman exec "$c" sh -c 'id -u')
      [ "$uid" != 0 ] || { say "$c: a process runs as root"; return 1; }
      if [ -n "$(podman inspect -f '{{if .Config.Healthcheck}}{{.Config.Healthcheck.Test}}{{end}}' "$c")" ]; then
        # No systemd here to run the checks on a timer: run each once, as `docker ps` would have.
        wait_for "$c to be healthy" 60 podman healthcheck run "$c"
      fi
      echo "    $c: user $user (uid $uid), running$([ -n "$(podman inspect -f '{{if .Config.Healthcheck}}x{{end}}' "$c")" ] && echo ', healthy')"
    else
      [ "$(podman inspect -f '{{.State.ExitCode}}' "$c")" = 0 ] || { say "$c exited with $(podman inspect -f '{{.State.ExitCode}}' "$c")"; return 1; }
      echo "    $c: user $user, exited 0"
    fi
  done
}
pg_ready() { podman exec "$1" pg_isready -U approvals -d approvals; }

# --- the clustered topology --------------------------------------------------------------
say "compose.yaml: PostgreSQL and 3 NATS nodes"
big up -d postgres nats-1 nats-2 nats-3
wait_for "PostgreSQL" 90 pg_ready "${PROJECT}_postgres_1"
# podman-compose does not wait for depends_on conditions: migrate first, then the services.
say "compose.yaml: migrate"
big up -d migrate
[ "$(podman wait "${PROJECT}_migrate_1")" = 0 ] || { podman logs "${PROJECT}_migrate_1" | tail -20; exit 1; }
say "compose.yaml: 2 replicas of every service and the balancer"
big up -d
wait_for "/health with every service at 2 instances" 300 healthy_front 2
say "compose.yaml: healthy on $base"
walk "${PROJECT}_gateway_1"
check_containers "$PROJECT"
big down -v -t 10
say "compose.yaml: stopped and removed"

# --- one container for small teams ---------------------------------------------------------
say "compose.small.yaml: PostgreSQL"
small up -d postgres
wait_for "PostgreSQL" 90 pg_ready "${SMALL}_postgres_1"
say "compose.small.yaml: all-in-one"
small up -d
wait_for "/health of all-in-one" 240 healthy_front 1
say "compose.small.yaml: healthy on $base"
walk "${SMALL}_approvals_1"
check_containers "$SMALL"
# The supervisor starts a killed service again: the decisions service's process, by its pid.
pid=$(podman exec "${SMALL}_approvals_1" node -e "
  const fs = require('fs');
  for (const p of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    const cmd = fs.readFileSync('/proc/' + p + '/cmdline', 'utf8');
    if (p !== String(process.pid) && cmd.split('\\0').some((a) => a.endsWith('services/decisions/dist/main.js'))) { console.log(p); break; }
  }")
[ -n "$pid" ] || { say "no decisions process in all-in-one"; exit 1; }
podman exec "${SMALL}_approvals_1" sh -c "kill -9 $pid"
say "killed decisions (pid $pid) inside all-in-one"
sleep 3
wait_for "decisions back in all-in-one" 120 healthy_front 1
walk "${SMALL}_approvals_1"
# (grep reads the whole log: with -q it would stop at the match, podman logs would get
# SIGPIPE, and pipefail would call the found line a failure.)
podman logs "${SMALL}_approvals_1" 2>&1 | grep 'decisions exited (SIGKILL); restarting' >/dev/null || { say "no restart of decisions in the log"; exit 1; }
small down -v -t 10
say "compose.small.yaml: stopped and removed"
say "passed in $(($(date +%s) - t0)) s"
