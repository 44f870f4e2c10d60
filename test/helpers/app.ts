import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import type { Database } from '../../src/db/client.js'
import { freshDatabase, type FreshDatabase, type FreshDatabaseOptions } from './database.js'

export const ADMIN_KEY = 'test-admin-key-0123456789abcdef'

export interface TestAppOptions extends FreshDatabaseOptions {
  logger?: FastifyBaseLogger
}

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
 * Rate limits are off unless a test turns them on. `options` says where the database is created
 * and, for a test that reads the request log, which logger the app writes to (silent otherwise).
 */
export async function buildTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const { logger = false, ...database } = options
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mls-test-'))
  const config = loadConfig({
    DATA_DIR: dataDir,
    SECRET_KEY: 'test-secret-key-that-is-long-enough-0123',
    ADMIN_API_KEY: ADMIN_KEY,
    RATE_LIMIT_ENABLED: 'false',
    PUBLIC_BASE_URL: 'http://mls.test',
    ...env,
  })
  const fresh = await freshDatabase({ ...database, statementTimeoutMs: config.databaseStatementTimeoutMs })
  const app = await buildApp({ config, database: fresh.handle, logger })
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
