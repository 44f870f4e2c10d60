import { compile } from '@fastify/proxy-addr'
import type { FastifyRequest } from 'fastify'
import ipaddr from 'ipaddr.js'

/**
 * Whether the client went away before its request's body had all arrived (the body stream was
 * destroyed before its end, which Node does when the connection closes). Never under `inject`.
 */
export function clientHasGone(request: FastifyRequest): boolean {
  return request.raw.readableAborted
}

/**
 * The address a client's requests are counted by, for limits per client: an IPv4 address, or
 * the /64 of an IPv6 one. An IPv6 client usually holds a whole /64, and could otherwise take a
 * fresh address for every few requests. A port some proxies write into X-Forwarded-For
 * (`203.0.113.5:4711`, `[2001:db8::1]:443`) is left out: it changes with every connection.
 */
export function clientNetwork(written: string): string {
  const ip = withoutPort(written)
  if (!ipaddr.isValid(ip)) return written
  const address = ipaddr.process(ip)
  if (address.kind() === 'ipv4') return address.toString()
  const network = (address as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16))
  return `${network.join(':')}::/64`
}

/**
 * Fastify's `trustProxy` for the configured proxies (TRUST_PROXY): whether an address in
 * X-Forwarded-For, or the connection's, is one of them, also as a proxy writes itself with a
 * port (`203.0.113.9:4711`), which would otherwise be taken for the client.
 */
export function trustedProxy(proxies: readonly string[]): (address: string, hop: number) => boolean {
  const trusts = compile([...proxies])
  return (address, hop) => trusts(withoutPort(address), hop)
}

/** An address as written with a port, or in brackets (IPv6), without them. */
function withoutPort(written: string): string {
  const match = /^\[([^\]]+)\](?::\d+)?$/.exec(written) ?? /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(written)
  return match ? match[1]! : written
}
