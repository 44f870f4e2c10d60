import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { eq } from 'drizzle-orm'
import pg from 'pg'
import { loadConfig } from '../../src/config.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/client.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { registrationRequests } from '../../src/db/schema.js'
import type { AdminTenant, ApiKey, CreatedApiKey, RegistrationStatus } from '../../src/modules/tenants/tenants.schemas.js'
import type { TenantsService } from '../../src/modules/tenants/tenants.service.js'
import { createServices } from '../../src/services.js'
import { adminCommand, HELP, NO_COMMAND, UsageError, type AdminCommand } from '../../src/cli/admin-command-line.js'
import { emptyServerDatabase, engine, newDataDir } from '../helpers/database.js'
import type { AdminRegistrationPage, ApprovedRegistration } from '../helpers/responses.js'
import { nodeArguments } from '../helpers/code-tree.js'

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
    serverDatabase = engine === 'postgres' ? await emptyServerDatabase() : undefined
    dataDir = await newDataDir('mls-cli-', { pglite: !serverDatabase })
    env = { DATA_DIR: dataDir, SECRET_KEY, DATABASE_URL: serverDatabase?.url ?? '', LOG_LEVEL: 'silent' }
  })
  after(async () => {
    await serverDatabase?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  async function withDatabase<T>(work: (handle: DatabaseHandle) => Promise<T>): Promise<T> {
    const handle = await openDatabase({ databaseUrl: serverDatabase?.url, pgliteDir: path.join(dataDir, 'pglite'), brief: true })
    try {
      await migrateDatabase(handle)
      return await work(handle)
    } finally {
      await handle.close()
    }
  }

  /** The tenants service on the CLI's database, as the service process builds it. */
  function withTenants<T>(work: (tenants: TenantsService, handle: DatabaseHandle) => Promise<T>): Promise<T> {
    return withDatabase(async (handle) => {
      const services = createServices({ config: loadConfig({ DATA_DIR: dataDir, SECRET_KEY }), database: handle })
      try {
        return await work(services.tenants, handle)
      } finally {
        await services.close()
      }
    })
  }

  const admin = (...args: string[]) => adminWith({}, ...args)

  /** The command run with `settings` over the suite's environment. */
  function adminWith(settings: Record<string, string>, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [...nodeArguments('src/cli/admin'), ...args], { env: { ...process.env, ...env, ...settings } })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
      child.on('close', (code) => resolve({ code, stdout, stderr }))
    })
  }

  it('lists, approves and rejects requests', async () => {
    const [first, second] = await withTenants(async (service) => {
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

    await withTenants(async (service, handle) => {
      const [row] = await handle.db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, second.request_code))
      assert.equal(row?.rejectReason, 'Не агентство')
      // The key the CLI printed is the one the public status lookup will reveal.
      const lookup = await service.statusForApplicant(first.request_code, 'CLI@agency.example')
      assert.ok(lookup.status === 'approved')
      assert.equal(lookup.api_key, status.api_key)
    })
  })

  // Each command is a process that opens the database: the routes' own tests cover listing and bad ids.
  it('suspends and unsuspends an agency, creates and revokes its keys', async () => {
    const tenantId = await withTenants(async (service) => {
      const { request_code: code } = await service.register({ company_name: 'Ключи через консоль', email: 'keys@agency.example' })
      const approved = await service.approve(code)
      assert.ok(approved.status === 'approved')
      return approved.tenant_id
    })

    const suspended = await admin('tenants', 'suspend', String(tenantId))
    assert.equal(suspended.code, 0, suspended.stderr)
    const suspendedAt = (JSON.parse(suspended.stdout) as AdminTenant).suspended_at
    assert.ok(suspendedAt)
    const unsuspended = await admin('tenants', 'unsuspend', String(tenantId))
    assert.equal(unsuspended.code, 0, unsuspended.stderr)
    assert.equal((JSON.parse(unsuspended.stdout) as AdminTenant).suspended_at, null)

    const created = await admin('api-keys', 'create', String(tenantId), '--name', 'Выгрузка', '--expires-in-days', '30')
    assert.equal(created.code, 0, created.stderr)
    const key = JSON.parse(created.stdout) as CreatedApiKey
    assert.match(key.key, /^mls_live_/)
    assert.equal(key.name, 'Выгрузка')
    assert.ok(key.expires_at)
    await withTenants(async (service) => {
      assert.equal((await service.authenticate(key.key))?.tenant.id, tenantId)
      // A name counted as the route counts it, in characters: 100 emoji are 200 UTF-16 units.
      const named = adminCommand(['api-keys', 'create', String(tenantId), '--name', '🏠'.repeat(100)]) as AdminCommand
      assert.equal(((await named(service)) as CreatedApiKey).name, '🏠'.repeat(100))
    })

    const revoked = await admin('api-keys', 'revoke', String(tenantId), String(key.id))
    assert.equal(revoked.code, 0, revoked.stderr)
    assert.ok((JSON.parse(revoked.stdout) as ApiKey).revoked_at)
    await withTenants(async (service) => assert.equal(await service.authenticate(key.key), undefined))
  })

  it('prints usage and exits 2 on a line that is no command, 0 on --help, 1 on an unknown code or a value the routes would refuse', async () => {
    const wrong = await admin('registrations', 'delete')
    assert.equal(wrong.code, 2)
    assert.match(wrong.stderr, /^Unknown command: registrations delete.\n\n.*npm run admin -- registrations list/s)
    assert.equal(wrong.stdout, '', 'an error leaves stdout, the answers’ stream, empty')
    const nothing = await admin()
    assert.equal(nothing.code, 2)
    assert.match(nothing.stderr, /npm run admin -- tenants show\|suspend\|unsuspend/)
    assert.equal(nothing.stdout, '')
    const help = await admin('--help')
    assert.equal(help.code, 0, help.stderr)
    assert.match(help.stdout, /npm run admin -- api-keys revoke/)
    const tooLong = await admin('registrations', 'reject', 'reg_unknown', '--reason', 'x'.repeat(2001))
    assert.equal(tooLong.code, 1, tooLong.stderr)
    assert.match(tooLong.stderr, /--reason must be at most 2000 characters/)
    const unknown = await admin('registrations', 'approve', 'reg_unknown')
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /Registration request not found/)
  })

  it('exits 1 on a DATA_DIR that holds no database, and makes nothing there', async () => {
    const mistyped = path.join(dataDir, 'mistyped')
    const refused = await adminWith({ DATA_DIR: mistyped, DATABASE_URL: '' }, 'registrations', 'list')
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /^Invalid configuration:\n {2}- DATA_DIR: .*mistyped holds no database/)
    assert.equal(existsSync(mistyped), false)
  })

  it(
    'exits 1 on a DATABASE_URL naming a database that never held the service, and makes nothing there',
    { skip: engine !== 'postgres' && 'a server’s database' },
    async () => {
      const wrong = await emptyServerDatabase()
      try {
        const refused = await adminWith({ DATABASE_URL: wrong.url }, 'registrations', 'list', '--status', 'pending')
        assert.equal(refused.code, 1, refused.stdout)
        assert.match(refused.stderr, /^DATABASE_URL: the database holds no service/)
        const client = new pg.Client({ connectionString: wrong.url })
        await client.connect()
        try {
          const { rows } = await client.query<{ tables: number }>(`select count(*)::int as tables from pg_tables where schemaname in ('public', 'drizzle')`)
          assert.equal(rows[0]!.tables, 0)
        } finally {
          await client.end()
        }
      } finally {
        await wrong.drop()
      }
    },
  )
})

/** The line as `npm run admin` reads it, before it opens anything (its process is tested above). */
describe('the admin command line', () => {
  const refusal = (line: string[]) => {
    try {
      adminCommand(line)
    } catch (error) {
      return error as Error
    }
    assert.fail(`${line.join(' ')} was taken`)
  }

  it('is no command with a word, an argument or an option too many or missing, or an option given twice', () => {
    for (const [line, said] of [
      [['registrations', 'delete'], /^Unknown command: registrations delete\.$/],
      [['--limit'], /--limit/],
      [['registrations', 'list', '--colour', 'red'], /--colour/],
      // An argument too many is refused, never ignored (two agencies named, one suspended), and one missing too.
      [['tenants', 'suspend', '1', '2'], /tenants suspend takes one argument; not: 2/],
      [['registrations', 'list', 'pending'], /registrations list takes no argument; not: pending/],
      [['tenants', 'show'], /tenants show takes one argument/],
      [['api-keys', 'revoke', '1'], /api-keys revoke takes two arguments/],
      // An option another command takes: approving with a reason meant for a rejection approves nothing.
      [['registrations', 'approve', 'reg_unknown', '--reason', 'Не агентство'], /registrations approve takes no option; not: --reason/],
      [['tenants', 'show', '1', '--status', 'pending'], /tenants show takes no option; not: --status/],
      [['api-keys', 'list', '1', '--name', 'CRM'], /api-keys list takes --limit, --offset; not: --name/],
      [['registrations', 'reject', 'reg_unknown', '--reason'], /--reason/],
      // A request code to decide, said when missing.
      [['registrations', 'approve', ''], /registrations approve takes a request code/],
      [['registrations', 'reject', '', '--reason', 'Спам'], /registrations reject takes a request code/],
      // An option given twice: the last would win silently (a key for a day, or for ten years?).
      [['api-keys', 'create', '1', '--expires-in-days', '1', '--expires-in-days', '3650'], /given more than once: --expires-in-days/],
      // A rejection says why, as the route requires; blank with invisible characters is blank.
      ...[[], ['--reason', '  '], ['--reason', '\u200b']].map(
        (blank) =>
          [
            ['registrations', 'reject', 'reg_unknown', ...blank],
            /registrations reject takes --reason "why": a rejection says why, and it may not be blank/,
          ] as const,
      ),
    ] as const) {
      const error = refusal([...line])
      assert.ok(error instanceof UsageError, `${line.join(' ')}: ${error.message}`)
      assert.match(error.message, said)
    }
  })

  it('refuses the values the routes would refuse, naming them', () => {
    for (const [line, said] of [
      // As the route answers 422 to it: a reason of at most 2,000 characters.
      [['registrations', 'reject', 'reg_unknown', '--reason', 'x'.repeat(2001)], /^--reason must be at most 2000 characters$/],
      // A key name on one line, as the route requires.
      [['api-keys', 'create', '1', '--name', 'CRM\nexport'], /^--name must be one line of text, without tabs or other control characters/],
      [['api-keys', 'create', '1', '--name', '   '], /^--name must not be blank$/],
      [['api-keys', 'create', '1', '--name', 'x'.repeat(101)], /^--name must be at most 100 characters$/],
      [['api-keys', 'create', '1', '--expires-in-days', '3651'], /^--expires-in-days must be a whole number from 1 to 3650$/],
      [['registrations', 'list', '--status', 'waiting'], /^--status must be pending, approved or rejected$/],
      // As GET /admin/registrations answers 422 to them (limit 1 to 100), never a page.
      ...['abc', '0', '101'].map((limit) => [['registrations', 'list', '--limit', limit], /^--limit must be a whole number from 1 to 100$/] as const),
      [['tenants', 'show', '99999999999'], /^The tenant id must be a whole number from 1 to 2147483647$/],
      [['api-keys', 'revoke', '1', '0'], /^The key id must be a whole number from 1 to 2147483647$/],
    ] as const) {
      const error = refusal([...line])
      assert.ok(!(error instanceof UsageError), `${line.join(' ')} is a command with a wrong value, not a wrong line`)
      assert.match(error.message, said)
    }
  })

  it('counts a reason and a key name in characters, as the routes count them', () => {
    // 1,500 emoji are 3,000 UTF-16 units; 100 emoji are 200.
    assert.equal(typeof adminCommand(['registrations', 'reject', 'reg_unknown', '--reason', '🏠'.repeat(1500)]), 'function')
    assert.equal(typeof adminCommand(['api-keys', 'create', '1', '--name', '🏠'.repeat(100)]), 'function')
  })

  it('answers --help and an empty line with the usage', () => {
    assert.equal(adminCommand(['--help']), HELP)
    assert.equal(adminCommand(['registrations', 'list', '--help']), HELP)
    assert.equal(adminCommand([]), NO_COMMAND)
  })
})
