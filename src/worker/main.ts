import closeWithGrace from 'close-with-grace'
import { startRuntime } from '../runtime.js'
import { createServices } from '../services.js'
import { workerJobs } from './jobs.js'
import { Worker } from './worker.js'

/** A worker process on its own (`npm run start:worker`); run as many as the load needs. */
const { config, log, database, migrated } = await startRuntime('worker')
await migrated()
const services = createServices({ config, database })
const worker = new Worker({ services, config, log }, workerJobs(config), database)

closeWithGrace({ delay: 15_000, logger: { error: (message: string) => log.error(message) } }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'closing after an unexpected error')
  else log.info({ signal }, 'closing')
  await worker.stop()
  await services.close()
  await database.close()
})

worker.start()
