import { BlockList, isIP } from 'node:net';

/**
 * Addresses a tenant-set URL must not reach unless the deployment allows it: this host,
 * its private networks, link-local (cloud metadata), carrier-grade NAT, multicast and the
 * reserved ranges.
 */
const PRIVATE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96], // NAT64: embeds an IPv4 address
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv6');
}

/** An IPv4 address embedded in an IPv6 one (`::ffff:10.0.0.1`, `::ffff:a00:1`), else undefined. */
function embeddedIpv4(address: string): string | undefined {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return dotted[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return undefined;
}

export function isPrivateAddress(address: string): boolean {
  const v4 = embeddedIpv4(address);
  if (v4) return PRIVATE.check(v4, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true; // not an address: refuse rather than guess
  return PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** A list of CIDRs (`127.0.0.2/32,10.1.0.0/16`) an operator allows despite being private. */
export function parseCidrs(list: string | undefined): BlockList {
  const allowed = new BlockList();
  for (const raw of (list ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
    const [net, bitsText] = raw.split('/');
    const family = isIP(net ?? '');
    if (!net || family === 0) throw new Error(`not a CIDR: ${raw}`);
    const bits = bitsText === undefined ? (family === 4 ? 32 : 128) : Number(bitsText);
    if (!Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128)) throw new Error(`not a CIDR: ${raw}`);
    allowed.addSubnet(net, bits, family === 4 ? 'ipv4' : 'ipv6');
  }
  return allowed;
}

export interface AddressPolicy {
  /** Private targets allowed (WEBHOOK_ALLOW_PRIVATE_TARGETS=true). */
  allowPrivate: boolean;
  /** Private ranges allowed all the same (OUTBOUND_ALLOWED_CIDRS). */
  allowed?: BlockList;
}

/** Why `address` may not be reached under `policy`, or undefined when it may. */
export function addressRefusal(address: string, policy: AddressPolicy): string | undefined {
  if (policy.allowPrivate || !isPrivateAddress(address)) return undefined;
  const v4 = embeddedIpv4(address);
  const family = isIP(v4 ?? address);
  if (family !== 0 && policy.allowed?.check(v4 ?? address, family === 4 ? 'ipv4' : 'ipv6')) return undefined;
  return `${address} is a private or local address`;
}

/**
 * A cheap check at the time a tenant saves a URL: a host that is literally an address
 * the policy refuses, or `localhost`, is refused then (the connect-time check in the
 * outbound client is the real guard; a name may resolve anywhere later).
 */
export function literalTargetRefusal(url: string, policy: AddressPolicy): string | undefined {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  } catch {
    return 'not a URL';
  }
  if (policy.allowPrivate) return undefined;
  if (host === 'localhost' || host.endsWith('.localhost')) return `${host} is this host`;
  return isIP(host) ? addressRefusal(host, policy) : undefined;
}
