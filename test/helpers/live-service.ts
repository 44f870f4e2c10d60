import type { AddressInfo } from 'node:net'
import pino, { type Logger } from 'pino'
import { workerJobs } from '../../src/worker/jobs.js'
import { Worker } from '../../src/worker/worker.js'
import { buildTestApp, type TestApp } from './app.js'
import type { FreshDatabaseOptions } from './database.js'

export interface LiveService extends TestApp {
  /** Where the API answers, `http://127.0.0.1:<port>`. */
  baseUrl: string
}

export interface LiveServiceOptions extends FreshDatabaseOptions {
  /** Where the API's, the worker's and the database's outage and recovery lines go; silent by default. */
  log?: Logger
}

/**
 * The service as `npm start` runs it, for tests that talk HTTP from outside: the API listening
 * on a free loopback port and the background worker (internal check, webhook deliveries) beside it.
 */
export async function startLiveService(
  env: Record<string, string> = {},
  { log = pino({ level: 'silent' }), ...database }: LiveServiceOptions = {},
): Promise<LiveService> {
  const service = await buildTestApp(env, { ...database, logger: log })
  const availability = service.database.handle.availability
  availability.useLogger(log)
  await service.app.listen({ host: '127.0.0.1', port: 0 })
  const worker = new Worker({ services: service.app.services, config: service.config, log }, workerJobs(service.config), service.database.handle)
  worker.start()
  const { port } = service.app.server.address() as AddressInfo
  return {
    ...service,
    baseUrl: `http://127.0.0.1:${port}`,
    async close() {
      await worker.stop()
      await service.close()
    },
  }
}
