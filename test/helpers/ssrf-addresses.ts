import { isIP } from 'node:net'

/**
 * Addresses a tenant might give for a webhook or a photo, and whether the service may connect
 * to them with ALLOW_PRIVATE_NETWORK off. One table for every place the rule applies: the
 * address check itself, a webhook URL, a photo URL, and a host name resolving to the address.
 */
export interface AddressCase {
  /** As written in a URL's host (without the brackets an IPv6 address gets there). */
  address: string
  public: boolean
  /** What the form is, for assertion messages. */
  form: string
  /** What the WHATWG URL parser turns the host into, where that differs from `address`. */
  normalised?: string
}

const refused = (address: string, form: string, normalised?: string): AddressCase => ({ address, public: false, form, normalised })
const allowed = (address: string, form: string): AddressCase => ({ address, public: true, form })

// Teredo (2001::/32) carries a relay server in bits 32..64 and the client, inverted, in the
// last 32 bits. 4136:e378 is 65.54.227.120 (public); a247:28f1 is 93.184.215.14 inverted.
export const ADDRESS_CASES: readonly AddressCase[] = [
  // IPv4 and the spellings a URL parser reads as IPv4.
  refused('127.0.0.1', 'loopback'),
  refused('2130706433', 'loopback as one decimal number', '127.0.0.1'),
  refused('0177.0.0.1', 'loopback with an octal first part', '127.0.0.1'),
  refused('0x7f000001', 'loopback as one hexadecimal number', '127.0.0.1'),
  refused('0x7f.0.0.1', 'loopback with a hexadecimal first part', '127.0.0.1'),
  refused('127.1', 'loopback in two parts', '127.0.0.1'),
  refused('0', 'the unspecified address as one number', '0.0.0.0'),
  refused('0.0.0.0', 'unspecified'),
  refused('10.0.0.1', 'private'),
  refused('012.0.0.1', 'private with an octal first part', '10.0.0.1'),
  refused('172.16.0.1', 'private'),
  refused('192.168.1.1', 'private'),
  refused('169.254.169.254', 'link-local (cloud metadata)'),
  refused('2852039166', 'link-local as one decimal number', '169.254.169.254'),
  refused('100.64.0.1', 'shared address space (carrier-grade NAT)'),
  refused('192.0.2.2', 'documentation'),
  refused('224.0.0.1', 'multicast'),
  refused('255.255.255.255', 'broadcast'),

  // IPv6 of its own.
  refused('::', 'IPv6 unspecified'),
  refused('::1', 'IPv6 loopback'),
  refused('0:0:0:0:0:0:0:1', 'IPv6 loopback written out', '::1'),
  refused('fc00::1', 'unique local'),
  refused('fd00::2', 'unique local'),
  refused('fe80::1', 'link-local'),
  refused('fec0::1', 'deprecated site-local'),
  refused('ff02::1', 'multicast'),
  refused('2001:db8::1', 'documentation'),
  refused('100::1', 'discard-only'),

  // 127.0.0.1 in every IPv6 form that carries an IPv4 address.
  refused('::ffff:7f00:1', 'IPv4-mapped loopback'),
  refused('::ffff:127.0.0.1', 'IPv4-mapped loopback, dotted', '::ffff:7f00:1'),
  refused('0:0:0:0:0:ffff:7f00:1', 'IPv4-mapped loopback written out', '::ffff:7f00:1'),
  refused('::7f00:1', 'IPv4-compatible loopback'),
  refused('::127.0.0.1', 'IPv4-compatible loopback, dotted', '::7f00:1'),
  refused('::ffff:0:7f00:1', 'IPv4-translated loopback'),
  refused('2002:7f00:1::1', '6to4 of loopback'),
  refused('64:ff9b::7f00:1', 'NAT64 of loopback'),
  refused('64:ff9b::127.0.0.1', 'NAT64 of loopback, dotted', '64:ff9b::7f00:1'),
  refused('64:ff9b:1::7f00:1', 'local-use NAT64 of loopback (/96 layout)'),
  refused('64:ff9b:1:7f00:0:100:5db8:d70e', 'local-use NAT64 of loopback (/48 layout; a public address where a /96 would put it)'),
  refused('2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo with a loopback client'),
  refused('2001:0:7f00:1:8000:63bf:a247:28f1', 'Teredo with a loopback server'),

  // 10.0.0.1 likewise.
  refused('::ffff:a00:1', 'IPv4-mapped private'),
  refused('::a00:1', 'IPv4-compatible private'),
  refused('::ffff:0:a00:1', 'IPv4-translated private'),
  refused('2002:a00:1::1', '6to4 of private'),
  refused('64:ff9b::a00:1', 'NAT64 of private'),
  refused('64:ff9b:1::a00:1', 'local-use NAT64 of private'),
  refused('2001:0:4136:e378:8000:63bf:f5ff:fffe', 'Teredo with a private client'),
  refused('2001:0:a00:1:8000:63bf:a247:28f1', 'Teredo with a private server'),

  // 169.254.169.254 likewise.
  refused('::ffff:a9fe:a9fe', 'IPv4-mapped link-local'),
  refused('::a9fe:a9fe', 'IPv4-compatible link-local'),
  refused('::ffff:0:a9fe:a9fe', 'IPv4-translated link-local'),
  refused('2002:a9fe:a9fe::1', '6to4 of link-local'),
  refused('64:ff9b::a9fe:a9fe', 'NAT64 of link-local'),
  refused('64:ff9b:1::a9fe:a9fe', 'local-use NAT64 of link-local'),
  refused('2001:0:4136:e378:8000:63bf:5601:5601', 'Teredo with a link-local client'),
  refused('2001:0:a9fe:a9fe:8000:63bf:a247:28f1', 'Teredo with a link-local server'),

  // 100.64.0.1 likewise.
  refused('::ffff:6440:1', 'IPv4-mapped shared address space'),
  refused('::6440:1', 'IPv4-compatible shared address space'),
  refused('::ffff:0:6440:1', 'IPv4-translated shared address space'),
  refused('2002:6440:1::1', '6to4 of shared address space'),
  refused('64:ff9b::6440:1', 'NAT64 of shared address space'),
  refused('64:ff9b:1::6440:1', 'local-use NAT64 of shared address space'),
  refused('2001:0:4136:e378:8000:63bf:9bbf:fffe', 'Teredo with a shared-address-space client'),
  refused('2001:0:6440:1:8000:63bf:a247:28f1', 'Teredo with a shared-address-space server'),

  // Public, directly or through a form whose IPv4 address is public.
  allowed('93.184.215.14', 'public IPv4'),
  allowed('8.8.8.8', 'public IPv4'),
  allowed('2606:4700::1111', 'public IPv6'),
  allowed('2a00:1450:4010:c05::71', 'public IPv6'),
  allowed('::ffff:5db8:d70e', 'IPv4-mapped public'),
  allowed('2002:5db8:d70e::1', '6to4 of public'),
  allowed('64:ff9b::5db8:d70e', 'NAT64 of public'),
  allowed('2001:0:4136:e378:8000:63bf:a247:28f1', 'Teredo with a public server and client'),
]

/** The host part of a URL for the address: IPv6 goes in brackets. */
export const urlHost = (address: string): string => (address.includes(':') ? `[${address}]` : address)

/** The address the service sees once a URL parser has read it, as its error messages name it. */
export const seenAs = (entry: AddressCase): string => entry.normalised ?? entry.address

/** Addresses a resolver could answer with: only the canonical spellings, not `0177.0.0.1`. */
export const resolvable = (entry: AddressCase): boolean => isIP(entry.address) !== 0
