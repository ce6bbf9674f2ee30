#!/usr/bin/env bash
# Makes the base image the Dockerfile builds on where no container registry is reachable:
# Debian bookworm (debootstrap --variant=minbase) plus this machine's Node.js, npm and CA
# bundle, and the `node` user (uid 1000) the official node image has. Imported as $BASE_IMAGE
# (default localhost/approvals-base:bookworm-node<major>); nothing is done when it exists.
set -euo pipefail
node_major=$(node -p 'process.versions.node.split(".")[0]')
IMAGE=${BASE_IMAGE:-localhost/approvals-base:bookworm-node$node_major}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if podman image exists "$IMAGE"; then
  echo "[base] $IMAGE exists"
  exit 0
fi
root=$(mktemp -d /var/tmp/approvals-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
if [ -n "${BASE_ROOTFS:-}" ] && [ -f "$BASE_ROOTFS/etc/debian_version" ] && [ ! -d "$BASE_ROOTFS/debootstrap" ]; then
  # A finished debootstrap of the same suite (BASE_ROOTFS) is copied rather than made again.
  cp -a "$BASE_ROOTFS/." "$root/"
else
  echo "[base] debootstrap --variant=minbase bookworm ($MIRROR)"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$root.log" 2>&1 || { tail -20 "$root.log"; exit 1; }
  rm -f "$root.log"
fi
# Node.js as this machine has it: the binary and npm (with corepack when present).
node_bin=$(readlink -f "$(command -v node)")
prefix=$(dirname "$(dirname "$node_bin")")
install -D -m 0755 "$node_bin" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/lib/node_modules"
for m in npm corepack; do
  [ -d "$prefix/lib/node_modules/$m" ] && cp -a "$prefix/lib/node_modules/$m" "$root/usr/local/lib/node_modules/"
done
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
# This machine's trust store (its registries may be reached through a proxy with a CA of
# its own), for Node.js and npm as on the host; the official image path is untouched.
ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
if [ -f "$ca" ]; then
  install -D -m 0644 "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
  extra_ca=(--change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt')
else
  extra_ca=()
fi
chroot "$root" /usr/sbin/groupadd --gid 1000 node
chroot "$root" /usr/sbin/useradd --uid 1000 --gid node --shell /bin/bash --create-home node
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
echo "[base] importing $IMAGE (node $(node -v))"
tar -C "$root" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_VERSION='"$(node -p process.versions.node)" \
  "${extra_ca[@]}" \
  --change 'CMD ["node"]' - "$IMAGE" >/dev/null
echo "[base] $IMAGE ready"
