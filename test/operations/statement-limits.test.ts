import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { engine } from '../helpers/database.js'
import type { ErrorBody } from '../helpers/responses.js'

describe('a catalogue statement cut short by DATABASE_STATEMENT_TIMEOUT_MS', { skip: engine !== 'postgres' && 'PGlite has no statement time limit' }, () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({ DATABASE_STATEMENT_TIMEOUT_MS: '1000' })
  })
  after(() => t.close())

  it('answers 503 with Retry-After while a maintenance lock holds the catalogue past the limit, and serves once it is gone', async () => {
    // An operator's ALTER TABLE, VACUUM FULL or REINDEX holds its table for longer than a
    // search may run. The catalogue's version counter, read first on the pool, stays free.
    const maintenance = new pg.Client({ connectionString: t.database.url })
    await maintenance.connect()
    try {
      const { rows } = await maintenance.query<{ name: string }>(
        `select format('%I.%I', schemaname, tablename) as name from pg_tables where schemaname = 'public' and tablename <> 'catalogue_versions'`,
      )
      await maintenance.query('begin')
      await maintenance.query(`lock table ${rows.map((row) => row.name).join(', ')} in access exclusive mode`)
      // Held until the answer arrives: the server cuts the statement after its second.
      const held = await t.app.inject({ method: 'GET', url: '/mls/properties?limit=5' })
      await maintenance.query('commit')
      assert.equal(held.statusCode, 503, held.body)
      assert.equal(held.headers['retry-after'], '5')
      assert.equal(held.json<ErrorBody>().detail, 'The database could not finish this request in time; retry it shortly.')
    } finally {
      await maintenance.end()
    }
    const free = await t.app.inject({ method: 'GET', url: '/mls/properties?limit=5' })
    assert.equal(free.statusCode, 200, free.body)
  })
})
