import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { MAX_NAMED_SHAPES, prepared, type PreparedStatement } from '../../src/db/prepared.js'
import { freshDatabase, type FreshDatabase } from '../helpers/database.js'

describe('prepared statements', () => {
  let database: FreshDatabase
  before(async () => {
    database = await freshDatabase()
  })
  after(() => database.drop())

  it('name at most MAX_NAMED_SHAPES shapes per database; a new shape past them is built unnamed each time', async () => {
    const db = database.handle.pipelined
    const names: string[] = []
    const statementOf = (shape: string) =>
      prepared<number>(db, shape, (name) => {
        names.push(name)
        return { execute: () => Promise.resolve(names.length) } satisfies PreparedStatement<number>
      })
    for (let shape = 0; shape < MAX_NAMED_SHAPES; shape++) statementOf(`shape ${shape}`)
    assert.equal(new Set(names).size, MAX_NAMED_SHAPES)
    assert.ok(names.every((name) => /^mls_[0-9a-f]{20}$/.test(name)))
    // Known shapes keep their statements: nothing is built again.
    const first = statementOf('shape 0')
    assert.equal(statementOf('shape 0'), first)
    assert.equal(names.length, MAX_NAMED_SHAPES)
    // Past the bound, each use builds the statement anew, with no name for the server to keep.
    statementOf('one shape too many')
    statementOf('one shape too many')
    assert.deepEqual(names.slice(MAX_NAMED_SHAPES), ['', ''])
  })

  it('runs a statement built unnamed on the database', async () => {
    const db = database.handle.pipelined
    const statement = db
      .select({ answer: sql<number>`${sql.placeholder('value')}::int + 1` })
      .from(sql`(select 1) as one`)
      .prepare('')
    assert.deepEqual(await statement.execute({ value: 41 }), [{ answer: 42 }])
  })
})
