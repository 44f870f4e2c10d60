import closeWithGrace from 'close-with-grace'
import { startRuntime } from '../runtime.js'
import { Worker, workerJobs } from './worker.js'

/** A worker process on its own (`npm run start:worker`); run as many as the load needs. */
const { config, log, database } = await startRuntime('worker')
const worker = new Worker({ db: database.db, config, log }, workerJobs())

closeWithGrace({ delay: 15_000, logger: { error: (message: string) => log.error(message) } }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'closing after an unexpected error')
  else log.info({ signal }, 'closing')
  await worker.stop()
  await database.close()
})

worker.start()
