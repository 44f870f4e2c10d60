import { fileURLToPath } from 'node:url'
import { sql } from 'drizzle-orm'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { migrate as migratePostgres } from 'drizzle-orm/node-postgres/migrator'
import type { NodePgDatabase } from 'drizzle-orm/node-postgres'
import type { PgliteDatabase } from 'drizzle-orm/pglite'
import { queryRows, type Database, type DatabaseHandle, type PipelinedDatabase } from './client.js'
import { applySeed } from './seed/apply-seed.js'

/** The SQL migrations generated from schema.ts and checked in (same place from src/ and dist/). */
export const migrationsFolder = fileURLToPath(new URL('../../drizzle', import.meta.url))

/** Any 64-bit number unique to this job: it names the advisory lock all processes agree on. */
export const MIGRATION_LOCK_ID = 0x6d6c735f // "mls_"

/**
 * Brings the schema and the shipped reference data up to date. Several processes may start
 * at once against one PostgreSQL: a session-level advisory lock lets one migrate while the
 * others wait, then find nothing left to do.
 */
export async function migrateDatabase(handle: DatabaseHandle): Promise<void> {
  await handle.withSession(async (db) => {
    await db.execute(sql`select pg_advisory_lock(${MIGRATION_LOCK_ID})`)
    try {
      await applyMigrations(handle.kind, db)
      await applySeed(db)
    } finally {
      await db.execute(sql`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`)
    }
  })
}

async function applyMigrations(kind: DatabaseHandle['kind'], db: Database): Promise<void> {
  // Each migrator wants its own driver's database type; the session underneath is that driver.
  if (kind === 'pglite') await migratePglite(db as unknown as PgliteDatabase, { migrationsFolder })
  else await migratePostgres(db as unknown as NodePgDatabase, { migrationsFolder })
}

/** Read from disk once: the checked-in migrations do not change while the process runs. */
let checkedInCount: number | undefined
function checkedInMigrations(): number {
  checkedInCount ??= readMigrationFiles({ migrationsFolder }).length
  return checkedInCount
}

/** Whether the database holds the service: a migration was applied to it once, by a start or `npm run migrate`. */
export async function holdsService(db: PipelinedDatabase): Promise<boolean> {
  const [table] = await queryRows<{ exists: boolean }>(db, sql`select to_regclass('drizzle.__drizzle_migrations') is not null as exists`)
  return table?.exists === true
}

/** How many checked-in migrations the database has not applied yet (for /readyz). */
export async function countPendingMigrations(db: PipelinedDatabase): Promise<number> {
  const expected = checkedInMigrations()
  if (!(await holdsService(db))) return expected
  const [applied] = await queryRows<{ count: number }>(db, sql`select count(*)::int as count from drizzle.__drizzle_migrations`)
  return expected - (applied?.count ?? 0)
}
