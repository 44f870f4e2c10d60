import cors, { type FastifyCorsOptions } from '@fastify/cors'
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'

/** The headers a browser page may send on a cross-origin call. */
const ALLOWED_HEADERS = ['Content-Type', 'X-API-Key', 'X-Admin-Key', 'Idempotency-Key', 'X-Request-Id', 'If-None-Match']
/** The answers' headers a page on another origin may read, beside the ones every page may. */
export const EXPOSED_HEADERS = [
  'ETag',
  'Location',
  'Retry-After',
  'X-Request-Id',
  'Idempotent-Replayed',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
]

const crossOrigin: FastifyCorsOptions = {
  methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
  allowedHeaders: ALLOWED_HEADERS,
  exposedHeaders: EXPOSED_HEADERS,
  maxAge: 600,
  // Every OPTIONS is answered as a preflight (204), never with @fastify/cors's plain-text 400.
  strictPreflight: false,
}

/**
 * What browsers may do with the service's answers.
 *
 * - **CORS.** The public routes (catalogue, reference data, photos, registration, health,
 *   the documents) answer every origin with `*` and no credentials: a portal's page anywhere
 *   may read them. The routes behind a key answer only the origins in CORS_ORIGINS
 *   (see `limitToListedOrigins`).
 * - **Security headers** for a JSON API: nothing may run in, frame or sniff an answer
 *   (`Content-Security-Policy: default-src 'none'; frame-ancestors 'none'`, `X-Frame-Options`,
 *   `nosniff`), no referrer leaves it, and public answers may be embedded anywhere
 *   (`Cross-Origin-Resource-Policy: cross-origin`, for photos above all). `/docs` sets a
 *   policy of its own (docs.ts).
 */
export default fp(
  async function browserPolicyPlugin(app: FastifyInstance) {
    // Helmet first, so that preflights, which @fastify/cors answers in its hook, carry its headers too.
    await app.register(helmet, securityHeaders(app.config))
    await app.register(cors, { ...crossOrigin, origin: '*' })
  },
  { name: 'browser-policy', decorators: { fastify: ['config'] } },
)

/**
 * The same policy as header lines, for the few answers written straight to the socket before
 * Fastify has a request (clientErrorHandler): every answer carries it. Which route the request
 * was for is not known then, so the resource policy is the stricter one.
 */
export const RAW_SECURITY_HEADER_LINES = [
  "Content-Security-Policy: default-src 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options: nosniff',
  'X-Frame-Options: DENY',
  'Referrer-Policy: no-referrer',
  'Cross-Origin-Resource-Policy: same-origin',
]

function securityHeaders(config: Config): FastifyHelmetOptions {
  return {
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    crossOriginResourcePolicy: { policy: 'cross-origin' },
    referrerPolicy: { policy: 'no-referrer' },
    xFrameOptions: { action: 'deny' },
    // HSTS binds browsers to HTTPS for the whole host for a year: sent only when the
    // deployment says it is reached over HTTPS (its TLS usually ends at a proxy in front).
    strictTransportSecurity: config.publicBaseUrl.startsWith('https://') ? { maxAge: 31_536_000, includeSubDomains: false } : false,
  }
}

/**
 * Call first in a scope whose routes need a key. Browsers on other origins may call them
 * only from CORS_ORIGINS (none by default: a key has no business in a page anyone can
 * read), and their answers may not be embedded by other sites.
 *
 * A preflight (OPTIONS) is matched by URL, not by the route it asks about, so every URL of
 * the scope gets an OPTIONS route of its own carrying the scope's policy; @fastify/cors
 * answers it in its onRequest hook, before the scope's key check.
 */
export function limitToListedOrigins(scope: FastifyInstance): void {
  const policy = {
    cors: { origin: scope.config.corsOrigins },
    helmet: { crossOriginResourcePolicy: { policy: 'same-origin' as const } },
  }
  const preflighted = new Set<string>()
  scope.addHook('onRoute', function keepToListedOrigins(route) {
    route.config = { ...route.config, ...policy }
    if ([route.method].flat().includes('OPTIONS') || preflighted.has(route.url)) return
    preflighted.add(route.url)
    this.route({
      method: 'OPTIONS',
      url: route.routePath,
      schema: { hide: true },
      // Unreachable while @fastify/cors answers every OPTIONS; a 404 should it stop.
      handler: (_request, reply) => reply.callNotFound(),
    })
  })
}
