import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { SERVICE_NAME, SERVICE_VERSION } from '../../lib/service-info.js'

const Status = Type.Object({ status: Type.String() })
const ops = { tags: ['Operations'] }

const ServiceIndex = Type.Object({
  name: Type.String(),
  version: Type.String(),
  description: Type.String(),
  links: Type.Object({
    docs: Type.String({ description: 'The interactive API reference.' }),
    openapi: Type.String({ description: 'The OpenAPI 3.1 document.' }),
  }),
})

/** The service's front door, liveness, readiness and metrics for orchestrators and Prometheus. */
const operationsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const index = {
    name: SERVICE_NAME,
    version: SERVICE_VERSION,
    description: 'An open multiple listing service for real-estate agencies.',
    links: { docs: `${app.config.publicBaseUrl}/docs`, openapi: `${app.config.publicBaseUrl}/openapi.json` },
  }
  app.get('/', { schema: { ...ops, summary: 'What this service is, and where its documentation is', response: { 200: ServiceIndex } } }, async () => index)

  app.get('/healthz', { schema: { ...ops, summary: 'The process is up', response: { 200: Status } } }, async () => ({ status: 'ok' }))

  app.get(
    '/readyz',
    {
      schema: {
        ...ops,
        summary: 'The database is reachable and fully migrated',
        response: { 200: Status, 503: Type.Object({ status: Type.String(), detail: Type.String() }) },
      },
    },
    async (request, reply) => {
      try {
        const readiness = await app.services.operations.readiness()
        if (!readiness.ready) return reply.code(503).send({ status: 'not_ready', detail: readiness.detail })
        return { status: 'ready' }
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check failed')
        return reply.code(503).send({ status: 'not_ready', detail: 'The database is unreachable.' })
      }
    },
  )

  app.get('/metrics', { schema: { ...ops, summary: 'Prometheus metrics (text format)' } }, async (_request, reply) => {
    reply.type(app.metrics.contentType)
    return app.metrics.metrics()
  })
}

export default operationsRoutes
