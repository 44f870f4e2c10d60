import type { FastifyRequest } from 'fastify'

/**
 * Whether the client went away before its request's body had all arrived (the body stream was
 * destroyed before its end, which Node does when the connection closes). Never under `inject`.
 */
export function clientHasGone(request: FastifyRequest): boolean {
  return request.raw.readableAborted
}
