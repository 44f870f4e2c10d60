import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { errorResponses, Url } from '../../lib/schemas.js'
import { SERVICE_NAME, SERVICE_VERSION } from '../../lib/service-info.js'

const Status = Type.Object({ status: Type.Enum(['ok', 'ready'], { type: 'string' }) }, { title: 'HealthStatus' })
const NotReady = Type.Object(
  { status: Type.Literal('not_ready'), detail: Type.String({ maxLength: 2000 }) },
  { title: 'NotReady', description: 'The database is unreachable, or migrations are still to be applied.' },
)
const ops = { tags: ['Operations'] }

const ServiceIndex = Type.Object(
  {
    name: Type.String({ maxLength: 100 }),
    version: Type.String({ maxLength: 50 }),
    description: Type.String({ maxLength: 500 }),
    links: Type.Object({ docs: Url('The interactive API reference.'), openapi: Url('The OpenAPI 3.1 document.') }),
  },
  { title: 'ServiceIndex' },
)

/** The service's front door, and liveness and readiness for orchestrators. Metrics have a port of their own (metrics-listener.ts). */
const operationsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const index = {
    name: SERVICE_NAME,
    version: SERVICE_VERSION,
    description: 'An open multiple listing service for real-estate agencies.',
    links: { docs: `${app.config.publicBaseUrl}/docs`, openapi: `${app.config.publicBaseUrl}/openapi.json` },
  }
  app.get(
    '/',
    {
      schema: {
        ...ops,
        operationId: 'getServiceIndex',
        summary: 'What this service is, and where its documentation is',
        description: 'The service’s name and version, with links to the interactive reference and the OpenAPI document.',
        response: { 200: ServiceIndex, ...errorResponses() },
      },
    },
    async () => index,
  )

  app.get(
    '/healthz',
    {
      schema: {
        ...ops,
        operationId: 'checkHealth',
        summary: 'The process is up',
        description: 'Answers without touching the database: for liveness probes.',
        response: { 200: Status, ...errorResponses() },
      },
    },
    async () => ({ status: 'ok' }),
  )

  app.get(
    '/readyz',
    {
      schema: {
        ...ops,
        operationId: 'checkReadiness',
        summary: 'The database is reachable and fully migrated',
        description: 'For readiness probes: 200 once the database answers and every migration is applied, 503 otherwise.',
        response: { 200: Status, ...errorResponses(), 503: NotReady },
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
}

export default operationsRoutes
