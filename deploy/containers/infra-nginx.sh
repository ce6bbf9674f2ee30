#!/bin/sh
# nginx in the foreground as a non-root user, the resolver being the container's own
# (podman's DNS is the network's gateway, not Docker's 127.0.0.11).
set -eu
ns=$(awk '/^nameserver/ { print $2; exit }' /etc/resolv.conf)
sed "s/__RESOLVER__/$ns/" /etc/nginx/nginx.conf >/tmp/nginx.conf
exec nginx -c /tmp/nginx.conf -g 'daemon off;'
