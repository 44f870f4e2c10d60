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
 * fresh address for every few requests.
 */
export function clientNetwork(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip
  const address = ipaddr.process(ip)
  if (address.kind() === 'ipv4') return address.toString()
  const network = (address as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16))
  return `${network.join(':')}::/64`
}
