import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { openDatabase, type DatabaseHandle } from '../../src/db/client.js'
import { migrateDatabase } from '../../src/db/migrate.js'

/** PostgreSQL when the environment names one (CI's second run), else in-memory PGlite. */
export const serverUrl = process.env.DATABASE_URL || undefined
export const engine = serverUrl ? 'postgres' : 'pglite'

export interface FreshDatabase {
  handle: DatabaseHandle
  /** The URL of the fresh PostgreSQL database, for child processes; undefined on PGlite. */
  url: string | undefined
  /** Its name on the PostgreSQL server; undefined on PGlite. */
  name: string | undefined
  drop(): Promise<void>
}

export interface FreshDatabaseOptions {
  /** The PostgreSQL server to create it on, when not the one DATABASE_URL names (a private cluster). */
  serverUrl?: string
}

/**
 * A new, empty, migrated database for one test file: a PGlite in memory, or a database
 * created for the purpose on the PostgreSQL server and dropped afterwards.
 */
export async function freshDatabase({ serverUrl: server = serverUrl }: FreshDatabaseOptions = {}): Promise<FreshDatabase> {
  if (!server) {
    const handle = await openDatabase({ databaseUrl: undefined, pgliteDir: undefined })
    await migrateDatabase(handle)
    return { handle, url: undefined, name: undefined, drop: () => handle.close() }
  }
  const name = `mls_test_${randomBytes(6).toString('hex')}`
  await onServer(server, `create database ${name}`)
  const url = new URL(server)
  url.pathname = `/${name}`
  const handle = await openDatabase({ databaseUrl: url.toString(), pgliteDir: undefined, poolSize: 5 })
  await migrateDatabase(handle)
  return {
    handle,
    url: url.toString(),
    name,
    async drop() {
      await handle.close()
      await onServer(server, `drop database if exists ${name} with (force)`)
    },
  }
}

/** Creates an empty database on the server (not migrated), for tests of migration itself. */
export async function emptyServerDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `mls_test_${randomBytes(6).toString('hex')}`
  await onServer(serverUrl!, `create database ${name}`)
  const url = new URL(serverUrl!)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => onServer(serverUrl!, `drop database if exists ${name} with (force)`) }
}

async function onServer(server: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: server })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}
