import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { createLogger } from '../../src/lib/log.js'
import { freshDatabase, type FreshDatabase } from '../helpers/database.js'

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
