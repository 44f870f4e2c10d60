/**
 * The service under test, as a child process of the bench: the real app (every plugin and
 * hook) on the configured database, listening on a free port that it announces on stdout.
 * Configuration comes from the environment the bench sets (rate limits off among it).
 */
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openConfiguredDatabase } from '../src/runtime.js'
import { announce, closeWithParent } from './announce.js'

const config = loadConfig()
// The bench has migrated and seeded the database already.
const database = await openConfiguredDatabase(config)
const app = await buildApp({ config, database })
await app.listen({ port: 0, host: '127.0.0.1' })

closeWithParent(async () => {
  await app.close()
  await database.close()
})

const address = app.server.address()
announce(typeof address === 'object' && address ? address.port : 0)
