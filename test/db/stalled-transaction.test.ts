import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { IDLE_IN_TRANSACTION_TIMEOUT_MS, openDatabase, queryRows, type DatabaseHandle } from '../../src/db/client.js'
import { engine, freshDatabase, type FreshDatabase } from '../helpers/database.js'

/** Far beyond the timeout, so that only a lock held for good fails the test, not a slow machine. */
const BLOCKED_FOR_GOOD_MS = IDLE_IN_TRANSACTION_TIMEOUT_MS + 25_000

/**
 * A process that freezes inside a transaction (paused, starved, cut off) must not hold its row
 * locks for as long as it is frozen: the server ends its session, and the others go on.
 */
describe('a transaction left idle by a frozen process', { skip: engine !== 'postgres' && 'PGlite has one connection and no other process' }, () => {
  let database: FreshDatabase
  let other: DatabaseHandle

  before(async () => {
    database = await freshDatabase()
    other = await openDatabase({ databaseUrl: database.url, pgliteDir: undefined, poolSize: 2 })
  })
  after(async () => {
    // The database first: dropping it ends every session, a lock left by a failure included.
    await database?.drop()
    await other?.close()
  })

  it('is ended by the server, releasing its locks to the other processes', async () => {
    let thaw = () => {}
    const thawed = new Promise<void>((resolve) => (thaw = resolve))
    let lockTaken = () => {}
    const locked = new Promise<void>((resolve) => (lockTaken = resolve))
    const frozen = database.handle.withSession(async (db) => {
      await db.execute(sql`begin`)
      await db.execute(sql`update property_statuses set name = name where id = 1`)
      lockTaken()
      await thawed
      // Back from the freeze: the transaction is gone, and says so.
      await assert.rejects(db.execute(sql`update property_statuses set name = name where id = 2`))
    })
    await locked

    const started = Date.now()
    let outcome: 'went through' | 'blocked'
    try {
      const blocked = other.db.execute(sql`update property_statuses set name = name where id = 1`)
      outcome = await Promise.race([
        blocked.then(() => 'went through' as const),
        new Promise<'blocked'>((resolve) => setTimeout(() => resolve('blocked'), BLOCKED_FOR_GOOD_MS).unref()),
      ])
    } finally {
      thaw()
    }
    const afterTheFreeze = await frozen.then(
      () => undefined,
      (error: unknown) => error,
    )
    assert.equal(outcome, 'went through', `still waiting for the frozen transaction's lock after ${Date.now() - started} ms`)
    assert.ifError(afterTheFreeze)

    // The process that froze carries on, on a new connection.
    const [row] = await queryRows<{ ok: number }>(database.handle.db, sql`select 1 as ok`)
    assert.equal(row!.ok, 1)
  })
})
