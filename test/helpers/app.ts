import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import type { Database } from '../../src/db/client.js'
import { freshDatabase, type FreshDatabase, type FreshDatabaseOptions } from './database.js'

export const ADMIN_KEY = 'test-admin-key-0123456789abcdef'

export interface TestApp {
  app: FastifyInstance
  db: Database
  config: Config
  database: FreshDatabase
  close(): Promise<void>
}

/**
 * The real app on a fresh migrated database, as a test file uses it: `before` builds it,
 * `after` closes it. `env` overrides the configuration the way the environment would.
 * Rate limits are off unless a test turns them on. `database` says where the database is created.
 */
export async function buildTestApp(env: Record<string, string> = {}, database: FreshDatabaseOptions = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mls-test-'))
  const config = loadConfig({
    DATA_DIR: dataDir,
    SECRET_KEY: 'test-secret-key-that-is-long-enough-0123',
    ADMIN_API_KEY: ADMIN_KEY,
    RATE_LIMIT_ENABLED: 'false',
    PUBLIC_BASE_URL: 'http://mls.test',
    ...env,
  })
  const fresh = await freshDatabase(database)
  const app = await buildApp({ config, database: fresh.handle, logger: false })
  await app.ready()
  return {
    app,
    db: fresh.handle.db,
    config,
    database: fresh,
    async close() {
      await app.close()
      await fresh.drop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
