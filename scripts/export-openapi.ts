import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'
import { migrateDatabase } from '../src/db/migrate.js'

/**
 * Writes the OpenAPI documents the service serves to files, without a server: the app is
 * built on an in-memory database and asked for them. `openapi.json` is the public and tenant
 * API (`/openapi.json`), `admin-openapi.json` the operators' (`/admin/openapi.json`).
 * Usage: tsx scripts/export-openapi.ts <out-dir>
 */
const outDir = process.argv[2]
if (!outDir) {
  console.error('usage: tsx scripts/export-openapi.ts <out-dir>')
  process.exit(2)
}

const ADMIN_KEY = 'export-openapi-admin-key'
const dataDir = mkdtempSync(path.join(tmpdir(), 'mls-openapi-'))
const config = loadConfig({
  DATA_DIR: dataDir,
  SECRET_KEY: 'export-openapi-secret-key-0123456789',
  ADMIN_API_KEY: ADMIN_KEY,
  PUBLIC_BASE_URL: 'http://localhost:3000',
})
const database = await openDatabase({ databaseUrl: undefined, pgliteDir: undefined })
try {
  await migrateDatabase(database)
  const app = await buildApp({ config, database, logger: false })
  await app.ready()
  mkdirSync(outDir, { recursive: true })
  const documents = {
    'openapi.json': await app.inject('/openapi.json'),
    'admin-openapi.json': await app.inject({ url: '/admin/openapi.json', headers: { 'x-admin-key': ADMIN_KEY } }),
  }
  for (const [file, response] of Object.entries(documents)) {
    if (response.statusCode !== 200) throw new Error(`${file}: the app answered ${response.statusCode}: ${response.body}`)
    writeFileSync(path.join(outDir, file), JSON.stringify(response.json(), null, 2) + '\n')
  }
  await app.close()
} finally {
  await database.close()
  rmSync(dataDir, { recursive: true, force: true })
}
