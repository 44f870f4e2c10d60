import type { TSchema } from 'typebox'
import type { FastifyInstance } from 'fastify'
import { header, withResponseHeaders, type ResponseHeaders } from '../lib/schemas.js'

const NO_STORE: ResponseHeaders = {
  'Cache-Control': header('An agency’s or an operator’s own data: never kept by a cache.', { type: 'string', enum: ['no-store'] }),
}

/** Success answers with a body: what a cache would keep. */
const kept = (status: number) => status >= 200 && status < 300 && status !== 204

/**
 * The scope's success answers are sent with `Cache-Control: no-store` where the route sets
 * nothing else, and declared so in the OpenAPI document as each route is registered. They hold
 * an agency's data (owners' names and phones) or an operator's, and the key travels in a
 * header caches do not vary on: a shared cache that keeps an answer which says nothing of
 * caching (RFC 9111 §4.2.2; some CDNs do by default) would hand it to anyone asking for its URL.
 */
export function neverCached(scope: FastifyInstance): void {
  scope.addHook('onRoute', (route) => {
    const responses = route.schema?.response as Record<string, TSchema> | undefined
    for (const [status, schema] of Object.entries(responses ?? {})) {
      const declared = (schema as { headers?: ResponseHeaders }).headers
      if (kept(Number(status)) && !declared?.['Cache-Control']) responses![status] = withResponseHeaders(schema, NO_STORE)
    }
  })
  scope.addHook('onSend', async (_request, reply) => {
    if (kept(reply.statusCode) && !reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store')
  })
}
