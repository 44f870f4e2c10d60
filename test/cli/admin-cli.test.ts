import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { eq } from 'drizzle-orm'
import { openDatabase, type DatabaseHandle } from '../../src/db/client.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { registrationRequests } from '../../src/db/schema.js'
import { SecretBox } from '../../src/lib/secrets.js'
import type { RegistrationStatus } from '../../src/modules/tenants/tenants.schemas.js'
import { TenantsService } from '../../src/modules/tenants/tenants.service.js'
import { emptyServerDatabase, engine } from '../helpers/database.js'
import type { AdminRegistrationPage, ApprovedRegistration } from '../helpers/responses.js'

const SECRET_KEY = 'cli-test-secret-key-long-enough-0123456789'

/**
 * `npm run admin` as an operator runs it: a separate process on the configured database.
 * On PGlite that database is a data directory, which only one process may hold at a time,
 * so the test opens it only between CLI runs.
 */
describe('npm run admin -- registrations', () => {
  let dataDir: string
  let serverDatabase: Awaited<ReturnType<typeof emptyServerDatabase>> | undefined
  let env: Record<string, string>

  before(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'mls-cli-'))
    serverDatabase = engine === 'postgres' ? await emptyServerDatabase() : undefined
    env = { DATA_DIR: dataDir, SECRET_KEY, DATABASE_URL: serverDatabase?.url ?? '', LOG_LEVEL: 'silent' }
  })
  after(async () => {
    await serverDatabase?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  async function withDatabase<T>(work: (handle: DatabaseHandle) => Promise<T>): Promise<T> {
    const handle = await openDatabase({ databaseUrl: serverDatabase?.url, pgliteDir: path.join(dataDir, 'pglite') })
    try {
      await migrateDatabase(handle)
      return await work(handle)
    } finally {
      await handle.close()
    }
  }

  function admin(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', ...args], { env: { ...process.env, ...env } })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
      child.on('close', (code) => resolve({ code, stdout, stderr }))
    })
  }

  it('lists, approves and rejects requests', async () => {
    const [first, second] = await withDatabase(async (handle) => {
      const service = new TenantsService(handle.db, new SecretBox(SECRET_KEY))
      return [
        await service.register({ company_name: 'Через консоль', email: 'cli@agency.example' }),
        await service.register({ company_name: 'Отказ', email: 'no@agency.example' }),
      ]
    })

    const list = await admin('registrations', 'list', '--status', 'pending')
    assert.equal(list.code, 0, list.stderr)
    const page = JSON.parse(list.stdout) as AdminRegistrationPage
    assert.equal(page.total, 2)
    assert.deepEqual(page.items.map((item) => item.request_code).sort(), [first.request_code, second.request_code].sort())

    const approved = await admin('registrations', 'approve', first.request_code)
    assert.equal(approved.code, 0, approved.stderr)
    const status = JSON.parse(approved.stdout) as ApprovedRegistration
    assert.equal(status.status, 'approved')
    assert.match(status.api_key, /^mls_live_/)

    const rejected = await admin('registrations', 'reject', second.request_code, '--reason', 'Не агентство')
    assert.equal(rejected.code, 0, rejected.stderr)
    assert.equal((JSON.parse(rejected.stdout) as RegistrationStatus).status, 'rejected')

    const again = await admin('registrations', 'approve', first.request_code)
    assert.equal(again.code, 1)
    assert.match(again.stderr, /already approved/)

    await withDatabase(async (handle) => {
      const [row] = await handle.db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, second.request_code))
      assert.equal(row?.rejectReason, 'Не агентство')
      // The key the CLI printed is the one the public status lookup will reveal.
      const service = new TenantsService(handle.db, new SecretBox(SECRET_KEY))
      const lookup = await service.statusForApplicant(first.request_code, 'CLI@agency.example')
      assert.ok(lookup.status === 'approved')
      assert.equal(lookup.api_key, status.api_key)
    })
  })

  it('prints usage and exits 2 on a wrong command, 1 on an unknown code', async () => {
    const wrong = await admin('registrations', 'delete')
    assert.equal(wrong.code, 2)
    assert.match(wrong.stdout, /npm run admin -- registrations list/)
    const unknown = await admin('registrations', 'approve', 'reg_unknown')
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /Registration request not found/)
  })
})
