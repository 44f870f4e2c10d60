/**
 * A webhook worker under test, as a child process of the bench: the real fan-out and
 * delivery jobs on the configured database, the way `npm run start:worker` runs them. Only
 * those two: the internal check of listings would otherwise start on the backlog the
 * submission scenario (d) left, and weigh on what (f) measures. It announces port 0 once
 * running, so the bench knows it started.
 */
import pino from 'pino'
import { loadConfig } from '../src/config.js'
import { webhookJobs } from '../src/modules/webhooks/webhooks.jobs.js'
import { openConfiguredDatabase } from '../src/runtime.js'
import { createServices } from '../src/services.js'
import { Worker } from '../src/worker/worker.js'
import { announce, closeWithParent } from './announce.js'

const config = loadConfig()
const database = await openConfiguredDatabase(config)
const services = createServices({ config, database })
const worker = new Worker(
  { services, config, log: pino({ level: config.logLevel }) },
  webhookJobs({ pollIntervalMs: config.webhookPollIntervalMs, concurrency: config.webhookDeliveryConcurrency }),
  database,
)
worker.start()

closeWithParent(async () => {
  await worker.stop()
  await services.close()
  await database.close()
})

announce(0)
