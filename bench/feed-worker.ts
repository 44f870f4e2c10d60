/**
 * A feed worker under test, as a child process of the bench: the feed jobs alone (scheduling
 * and runs) on the configured database, as `npm run start:worker` runs them beside the others.
 * It announces port 0 once running, so the bench knows it started.
 */
import pino from 'pino'
import { loadConfig } from '../src/config.js'
import { feedJobs } from '../src/modules/feeds/feed-runs.job.js'
import { openConfiguredDatabase } from '../src/runtime.js'
import { createServices } from '../src/services.js'
import { Worker } from '../src/worker/worker.js'
import { announce, closeWithParent } from './announce.js'

const config = loadConfig()
const database = await openConfiguredDatabase(config)
const services = createServices({ config, database })
const worker = new Worker({ services, config, log: pino({ level: config.logLevel }) }, feedJobs({ pollIntervalMs: config.feeds.pollIntervalMs }), database)
worker.start()

closeWithParent(async () => {
  await worker.stop()
  await services.close()
  await database.close()
})

announce(0)
