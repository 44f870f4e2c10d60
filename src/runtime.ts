import type { Logger } from 'pino'
import { embeddedDatabaseDir, loadConfig, type Config } from './config.js'
import { openDatabase, type DatabaseHandle } from './db/client.js'
import { migrateDatabase } from './db/migrate.js'
import { createLogger } from './lib/log.js'

export interface Runtime {
  config: Config
  log: Logger
  database: DatabaseHandle
  /**
   * Applies the migrations and reference data, waiting meanwhile for another process applying
   * them; a failure ends the process, its stack logged. Every process awaits it before any work.
   */
  migrated: () => Promise<void>
}

/**
 * What every process of the service starts with: configuration, a logger, and a database to
 * migrate and seed (`migrated`). A bad configuration or an unreachable database ends the
 * process here with one clear line.
 */
export async function startRuntime(role: string): Promise<Runtime> {
  let config: Config
  try {
    config = loadConfig()
  } catch (error) {
    console.error((error as Error).message)
    process.exit(1)
  }
  const log = createLogger({ level: config.logLevel, base: { role } })
  let database: DatabaseHandle
  try {
    database = await openConfiguredDatabase(config)
  } catch (error) {
    // Unreachable, refused, or PGlite's folder held by another process: the message says which,
    // in one line; a stack trace would only bury it.
    console.error(`Cannot open the database: ${(error as Error).message}`)
    process.exit(1)
  }
  database.availability.useLogger(log)
  let migration: Promise<void> | undefined
  const migrated = () =>
    (migration ??= migrateDatabase(database).then(
      () => log.info({ database: database.kind }, 'database ready'),
      (error: unknown) => {
        // A migration that fails is a defect to find: its stack is logged.
        log.fatal({ err: error }, 'cannot migrate the database')
        console.error(`Cannot migrate the database: ${(error as Error).message}`)
        process.exit(1)
      },
    ))
  return { config, log, database, migrated }
}

/**
 * The database the configuration names: PostgreSQL at DATABASE_URL, else PGlite in DATA_DIR.
 * `brief` for a command that runs a few statements and exits (DatabaseOptions.brief).
 */
export function openConfiguredDatabase(config: Config, { brief = false }: { brief?: boolean } = {}): Promise<DatabaseHandle> {
  return openDatabase({
    databaseUrl: config.databaseUrl,
    pgliteDir: embeddedDatabaseDir(config.dataDir),
    brief,
    poolSize: config.databasePoolSize,
    pipelinedConnections: config.databasePipelinedConnections,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
  })
}
