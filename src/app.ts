import { randomUUID } from 'node:crypto'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import type { Config } from './config.js'
import type { DatabaseHandle } from './db/client.js'
import { OutboundClient } from './lib/outbound-http.js'
import { SecretBox } from './lib/secrets.js'
import catalogueRoutes from './modules/catalogue/catalogue.routes.js'
import moderationAdminRoutes from './modules/moderation/admin-properties.routes.js'
import { ImageProcessor } from './modules/images/image-processing.js'
import imagesRoutes from './modules/images/images.routes.js'
import { ImagesService } from './modules/images/images.service.js'
import mediaRoutes from './modules/images/media.routes.js'
import { createStorage, mediaBaseUrl } from './modules/images/storage.js'
import operationsRoutes from './modules/operations/operations.routes.js'
import referenceAdminRoutes from './modules/reference/admin-places.routes.js'
import referenceRoutes from './modules/reference/reference.routes.js'
import registrationAdminRoutes from './modules/tenants/admin-registrations.routes.js'
import meRoutes from './modules/tenants/me.routes.js'
import registrationRoutes from './modules/tenants/registration.routes.js'
import propertiesRoutes from './modules/properties/properties.routes.js'
import { PropertiesService } from './modules/properties/properties.service.js'
import { TenantsService } from './modules/tenants/tenants.service.js'
import { deliveryLeaseMs } from './modules/webhooks/webhook-deliveries.js'
import { WebhookSender } from './modules/webhooks/webhook-sender.js'
import webhooksRoutes from './modules/webhooks/webhooks.routes.js'
import { WebhooksService } from './modules/webhooks/webhooks.service.js'
import authPlugin from './plugins/auth.js'
import databasePlugin from './plugins/database.js'
import docsPlugin, { adminDocsPlugin } from './plugins/docs.js'
import { clientErrorHandler, frameworkErrors, installErrorHandlers } from './plugins/error-handler.js'
import { installJsonBodyParser } from './plugins/json-body.js'
import metricsPlugin from './plugins/metrics.js'
import rateLimitPlugin from './plugins/rate-limit.js'
import { installValidators, rejectUnstorableValues } from './plugins/validation.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
    /** Encrypts secrets at rest with SECRET_KEY. */
    secrets: SecretBox
    tenants: TenantsService
    properties: PropertiesService
    images: ImagesService
    webhooks: WebhooksService
  }
}

export interface AppOptions {
  config: Config
  database: DatabaseHandle
  /** A logger to use instead of one built from config (tests pass a silent one). */
  logger?: FastifyBaseLogger | boolean
}

export const JSON_BODY_LIMIT = 1024 * 1024 // D9: JSON bodies at most 1 MiB

/** Builds the HTTP API: plugins, then feature modules. It does not listen; the caller does. */
export async function buildApp({ config, database, logger }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(logger && typeof logger === 'object' ? { loggerInstance: logger } : { logger: logger ?? { level: config.logLevel } }),
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    bodyLimit: JSON_BODY_LIMIT,
    trustProxy: config.trustProxy,
    routerOptions: { ignoreTrailingSlash: true },
    frameworkErrors,
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>()

  installValidators(app)
  // Bodies are JSON (multipart where a route adds it); a text body is a 415, not a string to validate.
  app.removeContentTypeParser('text/plain')
  installJsonBodyParser(app)
  installErrorHandlers(app)
  app.addHook('preHandler', rejectUnstorableValues)
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })

  app.decorate('config', config)
  app.decorate('secrets', new SecretBox(config.secretKey))
  await app.register(databasePlugin, { database })
  app.decorate('tenants', new TenantsService(app.db, app.secrets))
  const storage = createStorage(config)
  const media = { storage, baseUrl: mediaBaseUrl(config) }
  app.decorate('properties', new PropertiesService(app.db, media))
  const outbound = new OutboundClient({ allowPrivateNetwork: config.allowPrivateNetwork })
  app.addHook('onClose', () => outbound.close())
  app.decorate('images', new ImagesService(app.db, storage, new ImageProcessor(config.images), config, media.baseUrl, outbound))
  app.decorate(
    'webhooks',
    new WebhooksService(app.db, app.secrets, outbound, new WebhookSender(outbound, app.secrets, config.webhookTimeoutMs), {
      allowPrivateNetwork: config.allowPrivateNetwork,
      retryPolicy: { scheduleMs: config.webhookRetryScheduleMs },
      leaseMs: deliveryLeaseMs(config.webhookTimeoutMs),
    }),
  )

  await app.register(metricsPlugin)
  await app.register(rateLimitPlugin)
  await app.register(authPlugin)
  await app.register(docsPlugin)

  // Public routes.
  await app.register(operationsRoutes)
  await app.register(referenceRoutes)
  await app.register(registrationRoutes)
  await app.register(catalogueRoutes)
  if (config.storageDriver === 'local') await app.register(mediaRoutes)

  // Routes for tenants: every one needs X-API-Key and counts against the tenant's rate limit.
  await app.register(async (tenantScope) => {
    tenantScope.addHook('onRequest', tenantScope.authenticate)
    tenantScope.addHook('onRequest', tenantScope.tenantRateLimit)
    await tenantScope.register(meRoutes)
    await tenantScope.register(propertiesRoutes)
    await tenantScope.register(imagesRoutes)
    await tenantScope.register(webhooksRoutes)
  })

  // Routes for operators: every one needs X-Admin-Key.
  await app.register(async (adminScope) => {
    adminScope.addHook('onRequest', adminScope.authenticateAdmin)
    await adminScope.register(adminDocsPlugin)
    await adminScope.register(registrationAdminRoutes)
    await adminScope.register(referenceAdminRoutes)
    await adminScope.register(moderationAdminRoutes)
  })

  return app
}
