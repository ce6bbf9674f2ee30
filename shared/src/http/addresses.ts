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
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): translates into the site's own IPv4 space
  ['100::', 64], // discard-only
  ['2001::', 32], // Teredo: a tunnel endpoint, never a webhook receiver
  ['2001:db8::', 32], // documentation
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10], // site-local (deprecated, still routed inside some sites)
  ['ff00::', 8],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv6');
}

/** The eight 16-bit groups of an IPv6 address (a zone such as `%eth0` dropped), else undefined. */
function ipv6Groups(address: string): number[] | undefined {
  const plain = address.replace(/%.*$/, '');
  if (isIP(plain) !== 6) return undefined;
  let text = plain.toLowerCase();
  // A dotted IPv4 tail (`::ffff:1.2.3.4`) as the two groups it stands for.
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = rest ? rest.split(':') : [];
  const zeros = rest === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  const groups = [...left, ...zeros, ...right].map((g) => parseInt(g, 16));
  return groups.length === 8 ? groups : undefined;
}

/**
 * The IPv4 address an IPv6 one carries and is delivered to, else undefined: IPv4-mapped
 * (`::ffff:127.0.0.1`, `::ffff:7f00:1`), IPv4-compatible (`::127.0.0.1`, which the URL
 * parser writes `::7f00:1`), IPv4-translated (`::ffff:0:127.0.0.1`), NAT64's well-known
 * prefix (`64:ff9b::/96`) and 6to4 (`2002:AABB:CCDD::/48`). Each form is checked as the
 * IPv4 address it reaches, so none is a way around the IPv4 ranges.
 */
function embeddedIpv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  if (!g) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && (g[5] === 0xffff || g[5] === 0)) return v4(g[6]!, g[7]!); // mapped, compatible
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return v4(g[6]!, g[7]!); // translated
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return v4(g[6]!, g[7]!); // NAT64
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!); // 6to4
  return undefined;
}

/** Whether `address` is in the refused space: an IPv6 form carrying an IPv4 address is judged by that address. */
export function isPrivateAddress(address: string): boolean {
  const v4 = embeddedIpv4(address);
  if (v4) return PRIVATE.check(v4, 'ipv4');
  const plain = address.replace(/%.*$/, '');
  const family = isIP(plain);
  if (family === 0) return true; // not an address: refuse rather than guess
  return PRIVATE.check(plain, family === 4 ? 'ipv4' : 'ipv6');
}

/** A list of CIDRs (`127.0.0.2/32,10.1.0.0/16`) an operator allows despite being private. */
export function parseCidrs(list: string | undefined): BlockList {
  const allowed = new BlockList();
  for (const raw of (list ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
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
    host = new URL(url).hostname
      .replace(/^\[|\]$/g, '')
      .replace(/\.$/, '')
      .toLowerCase();
  } catch {
    return 'not a URL';
  }
  if (policy.allowPrivate) return undefined;
  if (host === 'localhost' || host.endsWith('.localhost')) return `${host} is this host`;
  return isIP(host) ? addressRefusal(host, policy) : undefined;
}
