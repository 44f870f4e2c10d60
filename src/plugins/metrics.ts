import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { secretsEqual } from '../lib/secrets.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** This app's Prometheus registry; other modules register their own metrics in it. */
    metrics: Registry
  }
}

/**
 * Prometheus metrics: request counts and latency by route template (never the raw URL, which
 * would give one series per id), plus the process defaults. One registry per app, so tests
 * can build several apps in a process.
 *
 * They are read on a port of their own (metrics-listener.ts, started by the process). The
 * public port answers `GET /metrics` only when METRICS_TOKEN is set, and then only to
 * `Authorization: Bearer <METRICS_TOKEN>`; to anyone else it is a 404 like any unknown route,
 * counted as a failure like one.
 */
export default fp(
  async function metricsPlugin(app: FastifyInstance) {
    const registry = new Registry()
    collectDefaultMetrics({ register: registry })

    const labelNames = ['method', 'route', 'status_code'] as const
    const requests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by route template and status code.',
      labelNames,
      registers: [registry],
    })
    const duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by route template and status code.',
      labelNames,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    })

    app.decorate('metrics', registry)
    app.addHook('onResponse', async (request, reply) => {
      const labels = {
        method: request.method,
        // Unmatched URLs share one label so scanners cannot blow up the series count.
        route: request.routeOptions.url ?? 'unmatched',
        status_code: String(reply.statusCode),
      }
      requests.inc(labels)
      duration.observe(labels, reply.elapsedTime / 1000)
    })

    const token = app.config.metrics.token
    if (token) {
      // With the CORS headers of every other answer: without them, a 404 here would tell a
      // prober, unlike an unknown route's, that the route exists.
      app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
        // Answered and counted as a URL no route serves would be; an address past its failures
        // is refused even the right token, or guessing would go on at full speed.
        const failure = await app.failureThrottle.reserve(request)
        const given = bearerToken(request)
        if (given === undefined || !secretsEqual(given, token)) {
          failure.keep()
          return reply.callNotFound()
        }
        await failure.refund()
        return reply
          .type(registry.contentType)
          .header('cache-control', 'no-store')
          .send(await registry.metrics())
      })
    }
  },
  { name: 'metrics', decorators: { fastify: ['config'] } },
)

function bearerToken(request: FastifyRequest): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1]
}
