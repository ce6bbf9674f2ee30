import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { DeliveryError } from './provider';

/** Addresses a webhook must not reach unless the deployment allows it: this host and its private networks. */
const PRIVATE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata endpoints included
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv6');
}

export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return PRIVATE.check(mapped[1]!, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true; // not an address: refuse rather than guess
  return PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * A webhook endpoint is set by people (any org member may register one): unless the
 * deployment says so (WEBHOOK_ALLOW_PRIVATE_TARGETS), it must not make the notifier call
 * this host or its private networks (a metadata service, a database, another service).
 * Checked on the resolved addresses, at send time. A refusal is permanent.
 */
export async function assertPublicTarget(url: string, allowPrivate: boolean): Promise<void> {
  if (allowPrivate) return;
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    throw new DeliveryError(`webhook endpoint is not a URL: ${url}`, true);
  }
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch (err) {
    throw new DeliveryError(`webhook host ${host} does not resolve: ${(err as Error).message}`);
  }
  const blocked = addresses.filter(isPrivateAddress);
  if (blocked.length) {
    throw new DeliveryError(`webhook target ${host} resolves to a private address (${blocked.join(', ')}); set WEBHOOK_ALLOW_PRIVATE_TARGETS=true to allow it`, true);
  }
}
