import { classifyAddress } from '../../src/net/addressClass';

describe('classifyAddress', () => {
  it.each([
    ['8.8.8.8', 'public'],
    ['93.184.216.34', 'public'],
    ['100.63.255.255', 'public'],
    ['100.128.0.0', 'public'],
    ['172.15.255.255', 'public'],
    ['172.32.0.0', 'public'],
    ['0.0.0.0', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link_local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
  ])('IPv4 %s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it.each([
    ['2606:4700:4700::1111', 'public'],
    ['2001:db8::1', 'public'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fc00::1', 'unique_local'],
    ['fd12:3456:789a::1', 'unique_local'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['FEBF::1', 'link_local'],
    ['ff02::1', 'multicast'],
  ])('IPv6 %s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it.each([
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::FFFF:10.0.0.1',
    '::ffff:8.8.8.8', // a public one too: refused in every mapped form
    '0:0:0:0:0:ffff:169.254.169.254',
    '::127.0.0.1', // deprecated IPv4-compatible
  ])('IPv4-mapped IPv6 %s is refused as ipv4_mapped', (address) => {
    expect(classifyAddress(address)).toBe('ipv4_mapped');
  });

  it('classifies NAT64 addresses by the IPv4 address they reach', () => {
    expect(classifyAddress('64:ff9b::7f00:1')).toBe('loopback');
    expect(classifyAddress('64:ff9b::8.8.8.8')).toBe('public');
  });

  it.each(['localhost', 'example.com', '999.1.1.1', ''])('%j is not an address', (text) => {
    expect(classifyAddress(text)).toBe('invalid');
  });
});
