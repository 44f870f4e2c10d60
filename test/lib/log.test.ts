import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { spawnSync } from 'node:child_process'
import { pathToFileURL } from 'node:url'
import { createLogger } from '../../src/lib/log.js'
import { buildTestApp } from '../helpers/app.js'
import { codeFile, codeRoot, nodeArguments } from '../helpers/code-tree.js'
import { freshDatabase, type FreshDatabase } from '../helpers/database.js'
import { createTenant } from '../helpers/factories.js'

describe('the log of a failed statement', () => {
  let database: FreshDatabase
  before(async () => {
    database = await freshDatabase()
  })
  after(() => database.drop())

  /** The JSON line the service's logger writes for `error`, logged as a request's failure is. */
  function logged(error: unknown): { line: string; err: { type: string; message: string; stack: string; query?: string } } {
    const lines: string[] = []
    createLogger({ level: 'error' }, { write: (line: string) => void lines.push(line) }).error({ err: error }, 'request failed')
    assert.equal(lines.length, 1)
    const line = lines[0]!
    return { line, err: (JSON.parse(line) as { err: ReturnType<typeof logged>['err'] }).err }
  }

  async function failure(statement: Promise<unknown>): Promise<unknown> {
    return statement.then(
      () => assert.fail('the statement was meant to fail'),
      (error: unknown) => error,
    )
  }

  it('names the statement and the database’s error, never the values', async () => {
    // Such a value is the digest of an API key being checked, an owner's phone, an e-mail address.
    const secret = 'c2VjcmV0LWtleS1kaWdlc3Q'
    const error = await failure(database.handle.db.execute(sql`select ${secret} as digest, ${'+79161234567'} as phone from no_such_table`))
    assert.match(String(error), new RegExp(secret), 'the error itself carries the value (as Drizzle writes it)')

    const { line, err } = logged(error)
    assert.doesNotMatch(line, new RegExp(secret))
    assert.doesNotMatch(line, /79161234567/)
    assert.match(err.message, /^Failed query: select \$1 as digest, \$2 as phone from no_such_table: relation "no_such_table" does not exist$/)
    assert.match(err.stack, /at /, 'the stack is kept')
    assert.equal(err.query, 'select $1 as digest, $2 as phone from no_such_table')
  })

  it('leaves the values out of an error that the failed statement caused', async () => {
    const secret = 'b3duZXJAYWdlbmN5LmV4YW1wbGU'
    const cause = await failure(database.handle.db.execute(sql`select ${secret} from no_such_table`))
    const { line, err } = logged(new Error('the batch was not recorded', { cause }))
    assert.doesNotMatch(line, new RegExp(secret))
    assert.match(err.message, /^the batch was not recorded: Failed query: select \$1 from no_such_table: relation "no_such_table" does not exist$/)
  })
})

describe('the log of a request', () => {
  it('logs a 4xx at info with its detail, an unknown route’s too', async () => {
    const lines: string[] = []
    const logger = createLogger({ level: 'info' }, { write: (line: string) => void lines.push(line) })
    const t = await buildTestApp({}, { logger })
    try {
      assert.equal((await t.app.inject({ url: '/no/such/route' })).statusCode, 404)
      assert.equal((await t.app.inject({ url: '/mls/properties?limit=0' })).statusCode, 422)
      const rejected = lines
        .map((line) => JSON.parse(line) as { level: number; msg: string; status?: number; detail?: string })
        .filter((line) => line.msg === 'request rejected')
      assert.deepEqual(
        rejected.map(({ level, status, detail }) => ({ level, status, detail })),
        [
          { level: 30, status: 404, detail: 'There is no GET /no/such/route route.' },
          { level: 30, status: 422, detail: 'Invalid query.limit: must be >= 1.' },
        ],
      )
    } finally {
      await t.close()
    }
  })

  it('leaves out the registration code and e-mail that read back an agency’s key, and keeps other URLs whole', async () => {
    const lines: string[] = []
    const logger = createLogger({ level: 'info' }, { write: (line: string) => void lines.push(line) })
    const t = await buildTestApp({}, { logger })
    try {
      const agency = await createTenant(t.app, { email: 'logged@agency.example' })
      lines.length = 0
      const query = `?email=${encodeURIComponent(agency.email)}`
      // Any spelling of the path that reaches the lookup, a letter percent-encoded included.
      for (const path of ['/tenants/register/', '/tenants/%72egister/', '/%74enants/register/']) {
        const lookup = await t.app.inject({ url: `${path}${agency.requestCode}${query}` })
        assert.equal(lookup.json<{ api_key?: string }>().api_key, agency.apiKey, `the lookup at ${path} answers the key`)
      }
      const search = await t.app.inject({ url: '/mls/properties?city_id=1&limit=5' })
      assert.equal(search.statusCode, 200)
      const urls = lines.map((line) => (JSON.parse(line) as { req?: { url?: string } }).req?.url).filter((url) => url !== undefined)
      assert.deepEqual(urls, [...Array<string>(3).fill('/tenants/register/{request_code}'), '/mls/properties?city_id=1&limit=5'])
      assert.deepEqual(
        lines.filter((line) => line.includes(agency.requestCode) || line.includes('logged@agency')),
        [],
      )
    } finally {
      await t.close()
    }
  })
})

describe('the log of an error that holds another', () => {
  /** The service's own logger (as src/runtime.ts builds it), its lines captured. */
  function capturingLogger() {
    const raw: string[] = []
    return { log: createLogger({ level: 'info' }, { write: (line: string) => void raw.push(line) }), raw }
  }
  /** ioredis copies the failed command onto its error: AUTH carries REDIS_URL's password. */
  const refusedAuth = () =>
    Object.assign(new Error('WRONGPASS invalid username-password pair'), { command: { name: 'auth', args: ['default', 'redis-secret-password'] } })

  it('leaves out a secret-bearing field in an AggregateError’s errors and in an error held in another field', () => {
    const { log, raw } = capturingLogger()
    log.error({ err: new AggregateError([refusedAuth()], 'every connection attempt failed') }, 'redis down')
    // ioredis's ClusterAllFailedError keeps the last node's error as `lastNodeError`.
    log.error({ err: Object.assign(new Error('Failed to refresh slots cache.'), { lastNodeError: refusedAuth() }) }, 'redis down')
    assert.equal(raw.length, 2)
    for (const line of raw) {
      assert.ok(!line.includes('redis-secret-password'), `the password is in the log: ${line}`)
      assert.match(line, /WRONGPASS/, 'the error itself is logged')
    }
  })

  it('logs a cause that is not an Error without changing it, a cause that refers to itself included', () => {
    const { log, raw } = capturingLogger()
    const cause: Record<string, unknown> = { command: { name: 'get', args: ['key'] }, reason: 'timeout' }
    log.error({ err: Object.assign(new Error('lookup failed'), { cause }) }, 'failed')
    assert.deepEqual(cause, { command: { name: 'get', args: ['key'] }, reason: 'timeout' })
    assert.match(raw[0]!, /"reason":"timeout"/)
    assert.ok(!raw[0]!.includes('"command"'))
    // In a process of its own: a logger that looped for ever would hold no test runner.
    const script = [
      `import { createLogger } from ${JSON.stringify(pathToFileURL(codeFile('src/lib/log')).href)}`,
      "const log = createLogger({ level: 'info' }, { write: () => {} })",
      "const cause = { reason: 'loop' }; cause.cause = cause",
      "log.error({ err: Object.assign(new Error('circular'), { cause }) }, 'failed'); console.log('logged')",
    ].join('\n')
    const run = spawnSync(process.execPath, [...nodeArguments('src/lib/log').slice(0, -1), '--input-type=module', '-e', script], {
      cwd: codeRoot,
      timeout: 30_000,
      encoding: 'utf8',
    })
    assert.equal(run.signal, null, 'logging the error never returned')
    assert.equal(run.stdout.trim(), 'logged', run.stderr)
  })
})
