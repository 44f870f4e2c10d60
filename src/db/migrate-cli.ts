import { loadConfig } from '../config.js'
import { openConfiguredDatabase } from '../runtime.js'
import { migrateDatabase } from './migrate.js'

/** `npm run migrate`: apply migrations and reference data, then exit. */
try {
  const database = await openConfiguredDatabase(loadConfig(), { brief: true })
  try {
    await migrateDatabase(database)
    console.log(`Database is up to date (${database.kind}).`)
  } finally {
    await database.close()
  }
} catch (error) {
  console.error((error as Error).message)
  process.exitCode = 1
}
