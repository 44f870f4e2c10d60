import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openConfiguredDatabase } from '../src/runtime.js'
const config = loadConfig()
const database = await openConfiguredDatabase(config)
const app = await buildApp({ config, database })
await app.listen({ port: 4555, host: '127.0.0.1' })
process.on('SIGINT', async () => { await app.close(); await database.close(); process.exit(0) })
