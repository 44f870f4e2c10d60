import { ConfigError, loadConfig } from '../config.js'
import { ApiError } from '../lib/errors.js'
import { ADMIN_USAGE, adminCommand, HELP, NO_COMMAND, UsageError, type AdminCommand } from './admin-command-line.js'

/** Runs the command on the configured database, with the service code the routes use. */
async function run(command: AdminCommand): Promise<unknown> {
  // Loaded only for a command that will run: a mistyped one is answered at once.
  const [{ openConfiguredDatabase }, { holdsService, migrateDatabase }, { createServices }] = await Promise.all([
    import('../runtime.js'),
    import('../db/migrate.js'),
    import('../services.js'),
  ])
  const config = loadConfig(process.env, { existingDataDir: true })
  const database = await openConfiguredDatabase(config, { brief: true })
  try {
    // A server's database that never held the service (DATABASE_URL naming the wrong one) is
    // refused as a folder that holds none is: answered from, it would look like an empty service.
    if (database.kind === 'postgres' && !(await database.withSession(holdsService))) {
      throw new ConfigError(
        `DATABASE_URL: the database holds no service (no migration was ever applied to it): set DATABASE_URL to the service's database, or run npm run migrate to make it one`,
      )
    }
    await migrateDatabase(database)
    const services = createServices({ config, database })
    try {
      return await command(services.tenants)
    } finally {
      await services.close()
    }
  } finally {
    await database.close()
  }
}

try {
  const command = adminCommand(process.argv.slice(2))
  if (command === HELP) {
    console.log(ADMIN_USAGE)
  } else if (command === NO_COMMAND) {
    console.error(ADMIN_USAGE)
    process.exitCode = 2
  } else {
    console.log(JSON.stringify(await run(command), null, 2))
  }
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`${error.message}\n\n${ADMIN_USAGE}`)
    process.exitCode = 2
  } else {
    const said = error instanceof ApiError || error instanceof ConfigError
    console.error(said ? error.message : `Failed: ${(error as Error).message}`)
    process.exitCode = 1
  }
}
