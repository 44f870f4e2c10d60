import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { startMetricsListener } from './metrics-listener.js'
import { startRuntime } from './runtime.js'
import { createServices } from './services.js'
import { workerJobs } from './worker/jobs.js'
import { Worker } from './worker/worker.js'

/**
 * The service's entry: the HTTP API and, unless `--no-worker`, the background worker in the
 * same process, sharing one set of services. Run more API processes with `--no-worker` and
 * workers with `npm run start:worker`, all against one PostgreSQL.
 */
const withWorker = !process.argv.includes('--no-worker')
const { config, log, database, migrated } = await startRuntime(withWorker ? 'api+worker' : 'api')
const services = createServices({ config, database })

// Listening before the migrations are applied: a process waiting for another's (a long one on a
// big catalogue) answers /healthz, and /readyz 503, rather than nothing, which a liveness probe
// would take for a dead process; every other route answers 503 until they are applied.
const app = await buildApp({ config, database, services, logger: log, startingUp: migrated() })
const { metrics: metricsConfig } = config
const metrics =
  metricsConfig.port === 0 ? undefined : await startMetricsListener({ registry: app.metrics, host: metricsConfig.host, port: metricsConfig.port, log })
const worker = withWorker ? new Worker({ services, config, log: log.child({ component: 'worker' }) }, workerJobs(config), database) : undefined

closeWithGrace({ delay: 15_000, logger: { error: (message: string) => log.error(message) } }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'closing after an unexpected error')
  else log.info({ signal }, 'closing')
  // Stop accepting and finish in-flight requests and jobs, then let go of what they used.
  await Promise.all([app.close(), worker?.stop(), metrics?.close()])
  await services.close()
  await database.close()
})

try {
  await app.listen({ port: config.port, host: config.host })
} catch (error) {
  // A port another process holds, or an address not this machine's: one line saying which, as
  // for a bad configuration, then what was opened is closed.
  console.error(`Cannot listen on ${config.host}:${config.port}: ${whyNotListening(error)}`)
  await Promise.all([app.close(), metrics?.close()])
  await services.close()
  await database.close()
  process.exit(1)
}
await migrated()
worker?.start()
log.info(`Open MLS is listening on http://${config.host}:${config.port} (docs: ${config.publicBaseUrl}/docs)`)

function whyNotListening(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException
  if (code === 'EADDRINUSE') return 'another process is listening there (set PORT to a free port).'
  if (code === 'EADDRNOTAVAIL') return 'the address is not one of this machine’s (set HOST).'
  if (code === 'EACCES') return 'not allowed (a port below 1024 needs privileges; set PORT).'
  return message
}
