import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { FastifyBaseLogger } from 'fastify'
import type { Registry } from 'prom-client'

export interface MetricsListener {
  /** Where it answers, `http://host:port/metrics`. */
  readonly url: string
  close(): Promise<void>
}

export interface MetricsListenerOptions {
  registry: Registry
  host: string
  /** 0 asks the system for a free port. */
  port: number
  log: FastifyBaseLogger
}

/**
 * `GET /metrics` on a port of its own (METRICS_PORT, bound to METRICS_HOST), so that the
 * request counts by route, the process's memory and its Node version stay off the public
 * port. A port that cannot be had is logged as an error and the process goes on serving the
 * API without it: metrics are never worth the service.
 */
export async function startMetricsListener({ registry, host, port, log }: MetricsListenerOptions): Promise<MetricsListener | undefined> {
  const server = createServer((request, response) => {
    answer(registry, request, response).catch((error: unknown) => {
      log.error({ err: error }, 'metrics could not be collected')
      if (!response.headersSent) sendJson(response, 500, 'Something went wrong on our side; the error has been logged.')
      else response.destroy()
    })
  })
  try {
    server.listen(port, host)
    await once(server, 'listening')
  } catch (error) {
    log.error({ err: error }, `Cannot serve metrics on ${host}:${port}; the API goes on without them (set METRICS_PORT to a free port, or 0 for none).`)
    return undefined
  }
  const address = server.address()
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${typeof address === 'object' && address ? address.port : port}/metrics`
  log.info(`metrics on ${url}`)
  return {
    url,
    close: async () => {
      server.close()
      server.closeAllConnections()
      await once(server, 'close')
    },
  }
}

async function answer(registry: Registry, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const path = (request.url ?? '/').split('?')[0]
  if (path !== '/metrics') return sendJson(response, 404, `There is no ${request.method} ${path} route.`)
  if (request.method !== 'GET' && request.method !== 'HEAD') return sendJson(response, 405, 'Only GET and HEAD are answered here.', { allow: 'GET, HEAD' })
  const body = await registry.metrics()
  response.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' })
  response.end(request.method === 'HEAD' ? undefined : body)
}

function sendJson(response: ServerResponse, status: number, detail: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers })
  response.end(JSON.stringify({ detail }))
}
