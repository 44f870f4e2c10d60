import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'drizzle-orm'
import { randomBytes } from 'node:crypto'
import { openDatabase, queryRows, type DatabaseHandle } from '../../src/db/client.js'
import { PipelinedConnections } from '../../src/db/pipelines.js'
import { buildTestApp } from '../helpers/app.js'
import { emptyServerDatabase, engine } from '../helpers/database.js'

const needsServer = { skip: engine !== 'postgres' && 'PGlite has one connection: `pipelined` is `db`' }

/** One standalone statement on the pipelined connections: its backend and an echo of `n`. */
async function echo(handle: DatabaseHandle, n: number): Promise<{ pid: number; n: number }> {
  const [row] = await queryRows<{ pid: number; n: number }>(handle.pipelined, sql`select pg_backend_pid() as pid, ${n}::int as n`)
  return row!
}

/** Waits this long at most for what happens at once on a quiet machine: CI machines are busy. */
const PATIENCE_MS = 30_000

/** Until a statement goes through again (a lost connection is seen when Node reads its socket). */
async function firstAnswer(handle: DatabaseHandle): Promise<{ pid: number; n: number }> {
  const deadline = Date.now() + PATIENCE_MS
  for (let attempt = 0; ; attempt++) {
    try {
      return await echo(handle, attempt)
    } catch (error) {
      if (Date.now() > deadline) throw error
      await sleep(50)
    }
  }
}

/**
 * Until both of a handle's two pipelined connections are open (the second opens in the
 * background), trying at most `attempts` times when given: a count of round trips, not a time,
 * so a busy machine slows the test down rather than failing it.
 */
async function bothOpen(handle: DatabaseHandle, attempts = Infinity): Promise<void> {
  const deadline = Date.now() + PATIENCE_MS
  for (let attempt = 0; attempt < attempts && Date.now() < deadline; attempt++) {
    const answers = await Promise.all([echo(handle, 0), echo(handle, 1), echo(handle, 2)])
    if (new Set(answers.map((answer) => answer.pid)).size === 2) return
    await sleep(25)
  }
  throw new Error('the second pipelined connection did not open')
}

/** Until the server is running `statement` (it was sent, and the next ones go after it). */
async function running(handle: DatabaseHandle, statement: string): Promise<void> {
  const deadline = Date.now() + PATIENCE_MS
  while (Date.now() < deadline) {
    const [row] = await queryRows<{ n: number }>(
      handle.db,
      sql`select count(*)::int as n from pg_stat_activity where state = 'active' and query = ${statement}`,
    )
    if (row!.n > 0) return
    await sleep(10)
  }
  throw new Error(`the server never ran ${statement}`)
}

const SLOW = 'select pg_sleep(3)'

describe('pipelined connections', needsServer, () => {
  let target: Awaited<ReturnType<typeof emptyServerDatabase>>
  let handle: DatabaseHandle

  before(async () => {
    target = await emptyServerDatabase()
    handle = await openDatabase({ databaseUrl: target.url, pgliteDir: undefined, pipelinedConnections: 2 })
  })
  after(async () => {
    await handle.close()
    await target.drop()
  })

  it('answer each of many statements sent at once with its own result, on two connections', async () => {
    await bothOpen(handle)
    const answers = await Promise.all(Array.from({ length: 300 }, (_, n) => echo(handle, n)))
    assert.deepEqual(
      answers.map((answer) => answer.n),
      Array.from({ length: 300 }, (_, n) => n),
    )
    assert.equal(new Set(answers.map((answer) => answer.pid)).size, 2)
  })

  it('fail a statement alone: those sent around it on its connection are answered', async () => {
    const single = await openDatabase({ databaseUrl: target.url, pgliteDir: undefined, pipelinedConnections: 1 })
    try {
      const [first, failed, last] = await Promise.allSettled([echo(single, 1), queryRows(single.pipelined, sql`select 1 / ${0}::int`), echo(single, 3)])
      assert.ok(failed.status === 'rejected')
      assert.match(String((failed.reason as Error).cause), /division by zero/)
      assert.ok(first.status === 'fulfilled' && last.status === 'fulfilled')
      assert.deepEqual([first.value.n, last.value.n], [1, 3])
      assert.equal(first.value.pid, last.value.pid, 'all three went on the one connection')
    } finally {
      await single.close()
    }
  })

  it('send a statement past one that is still running, to the other connection', async () => {
    let slowDone = false
    // Long enough that five quick statements finish first even on a busy machine.
    const slow = queryRows(handle.pipelined, sql.raw(SLOW)).then(() => (slowDone = true))
    await running(handle, SLOW)
    for (let n = 0; n < 5; n++) assert.equal((await echo(handle, n)).n, n)
    assert.equal(slowDone, false, 'the quick statements waited for the slow one')
    await slow
  })

  it('send a statement past one held up, even when the other connection has more unanswered', async () => {
    // Held up after a second here rather than 10 ms, so that the two quick statements below are
    // surely younger than that when the next is sent, however busy the machine.
    const heldUpMs = 1000
    const pipelines = new PipelinedConnections({ connectionString: target.url }, 2, undefined, heldUpMs)
    const pidOf = async () => (await pipelines.query({ text: 'select pg_backend_pid() as pid' })).rows[0] as { pid: number }
    try {
      const deadline = Date.now() + PATIENCE_MS
      while (new Set((await Promise.all([pidOf(), pidOf(), pidOf()])).map((row) => row.pid)).size < 2) {
        if (Date.now() > deadline) throw new Error('the second pipelined connection did not open')
        await sleep(25)
      }
      let slowDone = false
      const slow = pipelines.query({ text: SLOW }).then(() => (slowDone = true))
      await running(handle, SLOW)
      await sleep(heldUpMs + 100) // the rule is about age: the slow one must be older than heldUpMs
      // The slow one alone on its connection, two quick ones on the other: the next goes where
      // the oldest unanswered is not held up, though more are unanswered there.
      const others = [pipelines.query({ text: 'select pg_sleep(0.1)' }), pipelines.query({ text: 'select pg_sleep(0.1)' })]
      assert.equal(((await pipelines.query({ text: 'select 7 as n' })).rows[0] as { n: number }).n, 7)
      assert.equal(slowDone, false, 'the statement waited behind the slow one')
      await Promise.all([slow, ...others])
    } finally {
      await pipelines.end()
    }
  })

  it('send statements to the open connection while another fails to open', async () => {
    // A role allowed one connection: the second connection is refused.
    const role = `mls_test_${randomBytes(6).toString('hex')}`
    await handle.db.execute(sql.raw(`create role ${role} login connection limit 1`))
    const url = new URL(target.url)
    url.username = role
    const limited = new PipelinedConnections({ connectionString: url.toString() }, 2)
    try {
      // The first two connects race for the role's one connection (both may lose): until one wins.
      for (let attempt = 0; ; attempt++) {
        try {
          await limited.query({ text: 'select 1' })
          break
        } catch (error) {
          if (attempt >= 20) throw error
          await sleep(100)
        }
      }
      for (let round = 0; round < 3; round++) {
        // meanwhile the other slot tries to open again, once a second, and is refused
        await sleep(600)
        const answers = await Promise.allSettled(Array.from({ length: 20 }, (_, n) => limited.query({ text: 'select $1::int as n', values: [n] })))
        assert.deepEqual(
          answers.map((answer) => answer.status === 'fulfilled' && (answer.value.rows as { n: number }[])[0]?.n),
          Array.from({ length: 20 }, (_, n) => n),
        )
      }
    } finally {
      await limited.end()
      await handle.db.execute(sql.raw(`drop role ${role}`))
    }
  })

  it('replace a connection the server ended', async () => {
    const { pid } = await echo(handle, 0)
    await handle.db.execute(sql`select pg_terminate_backend(${pid})`)
    const answer = await firstAnswer(handle)
    assert.notEqual(answer.pid, pid)
    // at once, not after the pause that follows a failed connect (a second, many round trips)
    await bothOpen(handle, 40)
    // and keep answering, on live connections only
    const answers = await Promise.all(Array.from({ length: 20 }, (_, n) => echo(handle, n)))
    assert.ok(answers.every((row) => row.pid !== pid))
  })

  it('close their backends and refuse statements once closed', async () => {
    const closing = await openDatabase({ databaseUrl: target.url, pgliteDir: undefined })
    const pids = new Set((await Promise.all(Array.from({ length: 10 }, (_, n) => echo(closing, n)))).map((answer) => answer.pid))
    await closing.close()
    await assert.rejects(echo(closing, 2), (error: Error) => /connections are closed/.test(String(error.cause)))
    const listed = sql.join(
      [...pids].map((pid) => sql`${pid}`),
      sql`, `,
    )
    const [left] = await queryRows<{ count: number }>(handle.db, sql`select count(*)::int as count from pg_stat_activity where pid in (${listed})`)
    assert.equal(left?.count, 0)
  })
})

describe('the catalogue on pipelined connections', needsServer, () => {
  let context: Awaited<ReturnType<typeof buildTestApp>>
  before(async () => (context = await buildTestApp()))
  after(() => context.close())

  it('answers again once the server ended its connections', async () => {
    assert.equal((await context.app.inject({ method: 'GET', url: '/mls/properties' })).statusCode, 200)
    const ended = await queryRows<{ pid: number }>(
      context.db,
      sql`select pg_terminate_backend(pid), pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
    )
    assert.ok(ended.length >= 1)
    let status = 0
    const deadline = Date.now() + PATIENCE_MS
    while (status !== 200 && Date.now() < deadline) {
      status = (await context.app.inject({ method: 'GET', url: '/mls/properties?city_id=1' })).statusCode
      if (status !== 200) await sleep(50)
    }
    assert.equal(status, 200)
    for (const url of ['/mls/properties', '/mls/properties?limit=5', '/mls/properties?sort=price_asc']) {
      assert.equal((await context.app.inject({ method: 'GET', url })).statusCode, 200, url)
    }
  })
})
