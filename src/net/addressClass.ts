import { isIP } from 'node:net';

/**
 * Classifies a resolved IP address for outbound requests chosen by merchants (callback URLs):
 * `public`, or the kind of non-public range it is in. Pure; the caller resolves names first
 * (every address a name has), so a name cannot smuggle in a private target.
 */
export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'unique_local'
  | 'ipv4_mapped'
  | 'multicast'
  | 'reserved'
  | 'invalid';

// [first address as a 32-bit number, prefix length, class]
const V4_RANGES: Array<[string, number, AddressClass]> = [
  ['0.0.0.0', 8, 'unspecified'], // "this network"; 0.0.0.0 reaches the local host on Linux
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'cgnat'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link_local'], // cloud metadata endpoints live here
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'], // benchmarking
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'], // incl. 255.255.255.255
];

function v4Number(address: string): number {
  return address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function classifyV4(address: string): AddressClass {
  const n = v4Number(address);
  for (const [base, bits, kind] of V4_RANGES) {
    const size = 2 ** (32 - bits);
    const start = v4Number(base);
    if (n >= start && n < start + size) return kind;
  }
  return 'public';
}

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail becomes two groups). */
function v6Groups(address: string): number[] {
  let text = address.toLowerCase().replace(/%.*$/, ''); // zone id
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4Number(dotted[1]!);
    text = `${text.slice(0, -dotted[1]!.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function classifyV6(address: string): AddressClass {
  const g = v6Groups(address);
  const firstSixZero = g.slice(0, 6).every((x) => x === 0);
  if (g.every((x) => x === 0)) return 'unspecified';
  if (firstSixZero && g[6] === 0 && g[7] === 1) return 'loopback';
  // ::ffff:a.b.c.d reaches the IPv4 address a.b.c.d on a dual-stack socket: refused whatever
  // it embeds, as PRODUCT.md says; so are the deprecated IPv4-compatible ::a.b.c.d.
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return 'ipv4_mapped';
  if (firstSixZero) return 'ipv4_mapped';
  // 64:ff9b::/96 (NAT64) reaches the embedded IPv4 address: classified by it.
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    const embedded = `${g[6]! >> 8}.${g[6]! & 0xff}.${g[7]! >> 8}.${g[7]! & 0xff}`;
    return classifyV4(embedded);
  }
  if ((g[0]! & 0xfe00) === 0xfc00) return 'unique_local'; // fc00::/7
  if ((g[0]! & 0xffc0) === 0xfe80) return 'link_local'; // fe80::/10
  if ((g[0]! & 0xffc0) === 0xfec0) return 'private'; // fec0::/10, deprecated site-local
  if ((g[0]! & 0xff00) === 0xff00) return 'multicast';
  return 'public';
}

export function classifyAddress(address: string): AddressClass {
  const family = isIP(address.replace(/%.*$/, ''));
  if (family === 4) return classifyV4(address);
  if (family === 6) return classifyV6(address);
  return 'invalid';
}
