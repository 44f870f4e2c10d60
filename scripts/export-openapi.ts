import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'
import { migrateDatabase } from '../src/db/migrate.js'

/**
 * Writes the OpenAPI document the service serves at /openapi.json to a file, without a
 * server: the app is built on an in-memory database and asked for its document.
 * Usage: tsx scripts/export-openapi.ts <out-dir>  (writes <out-dir>/openapi.json)
 */
const outDir = process.argv[2]
if (!outDir) {
  console.error('usage: tsx scripts/export-openapi.ts <out-dir>')
  process.exit(2)
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'mls-openapi-'))
const config = loadConfig({ DATA_DIR: dataDir, SECRET_KEY: 'export-openapi-secret-key-0123456789', PUBLIC_BASE_URL: 'http://localhost:3000' })
const database = await openDatabase({ databaseUrl: undefined, pgliteDir: undefined })
try {
  await migrateDatabase(database)
  const app = await buildApp({ config, database, logger: false })
  await app.ready()
  mkdirSync(outDir, { recursive: true })
  writeFileSync(path.join(outDir, 'openapi.json'), JSON.stringify(app.swagger(), null, 2) + '\n')
  await app.close()
} finally {
  await database.close()
  rmSync(dataDir, { recursive: true, force: true })
}
