import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

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
  },
  { name: 'metrics' },
)
