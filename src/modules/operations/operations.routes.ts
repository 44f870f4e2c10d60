import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'

const Status = Type.Object({ status: Type.String() })
const ops = { tags: ['Operations'] }

/** Liveness, readiness and metrics for orchestrators and Prometheus. */
const operationsRoutes: FastifyPluginAsyncTypebox = async (app) => {
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
