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
  drop(): Promise<void>
}

/**
 * A new, empty, migrated database for one test file: a PGlite in memory, or a database
 * created for the purpose on the PostgreSQL server and dropped afterwards.
 */
export async function freshDatabase(): Promise<FreshDatabase> {
  if (!serverUrl) {
    const handle = await openDatabase({ databaseUrl: undefined, pgliteDir: undefined })
    await migrateDatabase(handle)
    return { handle, url: undefined, drop: () => handle.close() }
  }
  const name = `mls_test_${randomBytes(6).toString('hex')}`
  await onServer(`create database ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  const handle = await openDatabase({ databaseUrl: url.toString(), pgliteDir: undefined, poolSize: 5 })
  await migrateDatabase(handle)
  return {
    handle,
    url: url.toString(),
    async drop() {
      await handle.close()
      await onServer(`drop database if exists ${name} with (force)`)
    },
  }
}

/** Creates an empty database on the server (not migrated), for tests of migration itself. */
export async function emptyServerDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `mls_test_${randomBytes(6).toString('hex')}`
  await onServer(`create database ${name}`)
  const url = new URL(serverUrl!)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => onServer(`drop database if exists ${name} with (force)`) }
}

async function onServer(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}
