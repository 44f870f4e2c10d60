import { randomUUID } from 'node:crypto'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import type { Config } from './config.js'
import type { DatabaseHandle } from './db/client.js'
import { trustedProxy } from './lib/client-connection.js'
import { ApiError } from './lib/errors.js'
import { logSerializers } from './lib/log.js'
import catalogueChangesRoutes from './modules/catalogue/catalogue-changes.routes.js'
import catalogueRoutes from './modules/catalogue/catalogue.routes.js'
import feedsRoutes from './modules/feeds/feeds.routes.js'
import moderationAdminRoutes from './modules/moderation/admin-properties.routes.js'
import imagesRoutes from './modules/images/images.routes.js'
import mediaRoutes from './modules/images/media.routes.js'
import operationsRoutes from './modules/operations/operations.routes.js'
import referenceAdminRoutes from './modules/reference/admin-places.routes.js'
import referenceRoutes from './modules/reference/reference.routes.js'
import registrationAdminRoutes from './modules/tenants/admin-registrations.routes.js'
import tenantAdminRoutes from './modules/tenants/admin-tenants.routes.js'
import apiKeysRoutes from './modules/tenants/api-keys.routes.js'
import meRoutes from './modules/tenants/me.routes.js'
import registrationRoutes from './modules/tenants/registration.routes.js'
import propertiesRoutes from './modules/properties/properties.routes.js'
import webhooksRoutes from './modules/webhooks/webhooks.routes.js'
import authPlugin from './plugins/auth.js'
import browserPolicyPlugin, { limitToListedOrigins } from './plugins/browser-policy.js'
import { installConnectionClosing } from './plugins/connection-closing.js'
import docsPlugin, { adminDocsPlugin } from './plugins/docs.js'
import { clientErrorHandler, frameworkErrors, installErrorHandlers, RETRY_AFTER_S } from './plugins/error-handler.js'
import failureThrottlePlugin from './plugins/failure-throttle.js'
import { installJsonBodyParser, refuseEncodedBody } from './plugins/json-body.js'
import { neverCached } from './plugins/never-cached.js'
import keyRevocationsPlugin from './plugins/key-revocations.js'
import metricsPlugin from './plugins/metrics.js'
import rateLimitPlugin from './plugins/rate-limit.js'
import servicesPlugin from './plugins/services.js'
import { installSerializers } from './plugins/serialization.js'
import { installValidators, leftOutBodiesAsEmpty, refuseBodiesWhereNone, rejectUnstorableValues, validationFailed } from './plugins/validation.js'
import type { Services } from './services.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

export interface AppOptions {
  config: Config
  database: DatabaseHandle
  /** The process's services, when it shares them with a worker; otherwise the app builds and closes its own. */
  services?: Services
  /** A logger to use instead of one built from config (tests pass a silent one). */
  logger?: FastifyBaseLogger | boolean
  /**
   * Settles once the database is migrated, when the app listens before that (src/server.ts):
   * until then every route but /healthz and /readyz answers 503.
   */
  startingUp?: Promise<void>
}

/** JSON bodies are at most 1 MiB. */
export const JSON_BODY_LIMIT = 1024 * 1024
/** Headers are small: they must all arrive within this, whatever the body is given. */
const HEADERS_TIMEOUT_MS = 10_000

/** Builds the HTTP API: plugins, then feature modules. It does not listen; the caller does. */
export async function buildApp({ config, database, services, logger, startingUp }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(logger && typeof logger === 'object' ? { loggerInstance: logger } : { logger: logger ?? { level: config.logLevel, serializers: logSerializers } }),
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    bodyLimit: JSON_BODY_LIMIT,
    // A request that trickles in is cut off (408) rather than holding its connection and memory;
    // Node checks every second instead of every 30.
    requestTimeout: config.requestTimeoutMs,
    // A missing Host is refused below (requireHost), in the service's shape: Node's own 400 is bare.
    http: { connectionsCheckingInterval: 1000, headersTimeout: Math.min(config.requestTimeoutMs, HEADERS_TIMEOUT_MS), requireHostHeader: false },
    // By address, never `true`: trusting every hop takes the leftmost X-Forwarded-For entry, which the caller writes.
    trustProxy: config.trustedProxies.length > 0 ? trustedProxy(config.trustedProxies) : false,
    // A path parameter may be an agency's external id: 100 characters, each up to 4 bytes of
    // UTF-8 percent-encoded (12 characters); the router's default of 100 would answer 404.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1200 },
    frameworkErrors,
    clientErrorHandler,
    schemaErrorFormatter: validationFailed,
    // Answered below instead, in the service's shape (refuseWhileClosing).
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>()

  installValidators(app)
  installSerializers(app)
  // Bodies are JSON (multipart where a route adds it); a text body is a 415, not a string to validate.
  app.removeContentTypeParser('text/plain')
  installJsonBodyParser(app)
  installErrorHandlers(app, database.availability)
  installConnectionClosing(app)
  app.addHook('preHandler', rejectUnstorableValues)
  refuseBodiesWhereNone(app)
  leftOutBodiesAsEmpty(app)
  // Routes name a created resource by its path (`Location: /properties/5`). Behind a gateway that
  // serves the API under a path of its own (PUBLIC_BASE_URL https://gateway.example/mls), a
  // client resolves that path against the gateway's root, so it is given under the base's path.
  const basePath = new URL(config.publicBaseUrl).pathname.replace(/\/$/, '')
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id)
    if (basePath === '') return
    const location = reply.getHeader('location')
    if (typeof location === 'string' && location.startsWith('/')) reply.header('location', `${basePath}${location}`)
  })

  app.decorate('config', config)
  await app.register(servicesPlugin, { database, services })

  await app.register(metricsPlugin)
  await app.register(browserPolicyPlugin)
  // After the browser policy's hooks, whose headers its 400 carries.
  app.addHook('onRequest', requireHost)
  // After the browser policy's hooks, whose headers this answer carries too.
  refuseWhileClosing(app)
  if (startingUp) refuseWhileStartingUp(app, startingUp)
  // A request's body is judged only where the service would answer it at all.
  app.addHook('onRequest', refuseEncodedBody)
  await app.register(rateLimitPlugin)
  await app.register(failureThrottlePlugin)
  await app.register(authPlugin)
  await app.register(keyRevocationsPlugin, { database })
  await app.register(docsPlugin)

  // Public routes.
  await app.register(operationsRoutes)
  await app.register(referenceRoutes)
  await app.register(registrationRoutes)
  await app.register(catalogueRoutes)
  await app.register(catalogueChangesRoutes)
  if (config.storageDriver === 'local') await app.register(mediaRoutes, { prefix: '/media' })

  // Routes for tenants: every one needs X-API-Key and counts against the tenant's rate limit.
  // An address past its failed key checks is refused before its key is looked up.
  await app.register(async (tenantScope) => {
    limitToListedOrigins(tenantScope)
    neverCached(tenantScope)
    tenantScope.addHook('onRequest', tenantScope.failureThrottle.check)
    tenantScope.addHook('onRequest', tenantScope.authenticate)
    tenantScope.addHook('onRequest', tenantScope.apiKeyRateLimit)
    await tenantScope.register(meRoutes)
    await tenantScope.register(apiKeysRoutes)
    await tenantScope.register(propertiesRoutes)
    await tenantScope.register(imagesRoutes)
    await tenantScope.register(webhooksRoutes)
    await tenantScope.register(feedsRoutes)
  })

  // Routes for operators: every one needs X-Admin-Key.
  await app.register(async (adminScope) => {
    limitToListedOrigins(adminScope)
    neverCached(adminScope)
    adminScope.addHook('onRequest', adminScope.failureThrottle.check)
    adminScope.addHook('onRequest', adminScope.authenticateAdmin)
    await adminScope.register(adminDocsPlugin)
    await adminScope.register(registrationAdminRoutes)
    await adminScope.register(tenantAdminRoutes)
    await adminScope.register(referenceAdminRoutes)
    await adminScope.register(moderationAdminRoutes)
  })

  return app
}

/**
 * While the database is being migrated (or another process migrates it), only /healthz is
 * answered as usual; /readyz is its 503 and anything else a 503 with Retry-After, never a
 * statement on tables not there yet.
 */
function refuseWhileStartingUp(app: FastifyInstance, startingUp: Promise<void>): void {
  let started = false
  void startingUp.then(() => (started = true))
  app.addHook('onRequest', async (request, reply) => {
    if (started || request.routeOptions.url === '/healthz') return
    // Not ready until the reference data is in too, after the last migration.
    return refuseAsNotReady(request, reply, 'The service is starting: its database is being migrated; retry shortly.')
  })
}

/**
 * A process that cannot serve yet, or any longer: a readiness probe gets the answer /readyz
 * always gives when not ready, any other request a 503 with Retry-After.
 */
function refuseAsNotReady(request: FastifyRequest, reply: FastifyReply, detail: string) {
  if (request.routeOptions.url === '/readyz') return reply.code(503).send({ status: 'not_ready', detail })
  throw new ApiError('unavailable', detail, {}, { 'retry-after': String(RETRY_AFTER_S) })
}

/** HTTP/1.1 requires a Host header (RFC 9112 §3.2): a request without one is a 400, as Node would answer it. */
async function requireHost(request: FastifyRequest): Promise<void> {
  const { httpVersionMajor, httpVersionMinor } = request.raw
  const http11 = httpVersionMajor > 1 || (httpVersionMajor === 1 && httpVersionMinor >= 1)
  if (http11 && request.headers.host === undefined) throw new ApiError('bad_request', 'An HTTP/1.1 request must carry a Host header.')
}

/**
 * A request that arrives once the app is closing, on a connection kept alive (a load balancer's
 * pooled one, behind a request still in flight), is a 503 with Retry-After, through the hooks and
 * the error handler like any answer: a detail, its X-Request-Id, the browser policy's headers.
 * Fastify's own answer had none of them. Fastify closes the connection after it.
 */
function refuseWhileClosing(app: FastifyInstance): void {
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  app.addHook('onRequest', async (request, reply) => {
    if (closing) return refuseAsNotReady(request, reply, 'The service is shutting down; retry on another instance or shortly.')
  })
}
