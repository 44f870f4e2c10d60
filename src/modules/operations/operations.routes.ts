import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sql } from 'drizzle-orm'
import { Type } from 'typebox'
import { countPendingMigrations } from '../../db/migrate.js'
import { errorResponses } from '../../lib/schemas.js'

const Status = Type.Object({ status: Type.Enum(['ok', 'ready'], { type: 'string' }) }, { title: 'HealthStatus' })
const NotReady = Type.Object(
  { status: Type.Literal('not_ready'), detail: Type.String({ maxLength: 2000 }) },
  { title: 'NotReady', description: 'The database is unreachable, or migrations are still to be applied.' },
)
const ops = { tags: ['Operations'] }

/** Liveness, readiness and metrics for orchestrators and Prometheus (D1). */
const operationsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/healthz',
    {
      schema: {
        ...ops,
        operationId: 'checkHealth',
        summary: 'The process is up',
        description: 'Answers without touching the database: for liveness probes.',
        response: { 200: Status, 500: errorResponses()[500] },
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
        response: { 200: Status, 500: errorResponses()[500], 503: NotReady },
      },
    },
    async (request, reply) => {
      try {
        await app.db.execute(sql`select 1`)
        const pending = await countPendingMigrations(app.db)
        if (pending > 0) return reply.code(503).send({ status: 'not_ready', detail: `${pending} migration(s) not applied yet.` })
        return { status: 'ready' }
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check failed')
        return reply.code(503).send({ status: 'not_ready', detail: 'The database is unreachable.' })
      }
    },
  )

  app.get(
    '/metrics',
    {
      schema: {
        ...ops,
        operationId: 'getMetrics',
        summary: 'Prometheus metrics (text format)',
        description: 'Request counts and durations by route template and status, and the process’s own metrics, in the Prometheus text format.',
        response: {
          200: {
            description: 'The Prometheus text exposition format.',
            content: { 'text/plain': { schema: { type: 'string', maxLength: 10_000_000 } } },
          },
          500: errorResponses()[500],
        },
      },
    },
    async (_request, reply) => {
      reply.type(app.metrics.contentType)
      return app.metrics.metrics()
    },
  )
}

export default operationsRoutes
