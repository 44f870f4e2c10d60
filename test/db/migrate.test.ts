import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { DatabaseInUseError, openDatabase, queryRows } from '../../src/db/client.js'
import { countPendingMigrations, migrateDatabase, migrationsFolder } from '../../src/db/migrate.js'
import { propertyTypes } from '../../src/db/schema.js'
import { emptyServerDatabase, engine } from '../helpers/database.js'

const migrationCount = readMigrationFiles({ migrationsFolder }).length

function runMigrateCli(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/db/migrate-cli.ts'], {
      env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.on('close', (code) => resolve({ code, output }))
  })
}

describe('migrations', () => {
  it('apply to an empty database, and again as a no-op', async () => {
    const target = engine === 'postgres' ? await emptyServerDatabase() : undefined
    const handle = await openDatabase({ databaseUrl: target?.url, pgliteDir: undefined })
    try {
      assert.equal(await countPendingMigrations(handle.db), migrationCount)
      await migrateDatabase(handle)
      assert.equal(await countPendingMigrations(handle.db), 0)
      await migrateDatabase(handle)
      const [row] = await queryRows<{ count: number }>(handle.db, sql`select count(*)::int as count from drizzle.__drizzle_migrations`)
      assert.equal(row?.count, migrationCount)
      assert.equal(await handle.db.$count(propertyTypes), 5)
    } finally {
      await handle.close()
      await target?.drop()
    }
  })

  it('are safe when several processes start at once on one PostgreSQL', { skip: engine !== 'postgres' && 'needs DATABASE_URL' }, async () => {
    const target = await emptyServerDatabase()
    try {
      const runs = await Promise.all([1, 2, 3].map(() => runMigrateCli({ DATABASE_URL: target.url })))
      for (const run of runs) assert.equal(run.code, 0, run.output)
      const handle = await openDatabase({ databaseUrl: target.url, pgliteDir: undefined })
      try {
        const [row] = await queryRows<{ count: number }>(handle.db, sql`select count(*)::int as count from drizzle.__drizzle_migrations`)
        assert.equal(row?.count, migrationCount)
        assert.equal(await handle.db.$count(propertyTypes), 5)
      } finally {
        await handle.close()
      }
    } finally {
      await target.drop()
    }
  })

  it('run from `npm run migrate` on the embedded database in DATA_DIR', { skip: engine !== 'pglite' && 'PGlite only' }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'mls-migrate-'))
    try {
      const run = await runMigrateCli({ DATA_DIR: dataDir, DATABASE_URL: '' })
      assert.equal(run.code, 0, run.output)
      assert.match(run.output, /Database is up to date \(pglite\)/)
      const handle = await openDatabase({ databaseUrl: undefined, pgliteDir: path.join(dataDir, 'pglite') })
      try {
        assert.equal(await countPendingMigrations(handle.db), 0)
      } finally {
        await handle.close()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('the embedded database', () => {
  it('refuses a second opener of the same data directory with a clear error', async () => {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'mls-lock-')), 'pglite')
    const first = await openDatabase({ databaseUrl: undefined, pgliteDir: dir })
    try {
      await assert.rejects(openDatabase({ databaseUrl: undefined, pgliteDir: dir }), (error: unknown) => {
        assert.ok(error instanceof DatabaseInUseError)
        assert.match(error.message, /is in use by process \d+/)
        return true
      })
    } finally {
      await first.close()
    }
    // Once closed, it can be opened again.
    const again = await openDatabase({ databaseUrl: undefined, pgliteDir: dir })
    await again.close()
    rmSync(path.dirname(dir), { recursive: true, force: true })
  })
})
