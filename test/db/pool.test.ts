import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { isDatabaseUnavailable } from '../../src/db/availability.js'
import { openDatabase, queryRows, type DatabaseHandle } from '../../src/db/client.js'
import { emptyServerDatabase, engine } from '../helpers/database.js'

const needsServer = { skip: engine !== 'postgres' && 'PGlite has no connections to lose' }

const projectRoot = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Terminates backend `pid` and waits until it has exited, from a child process this one waits
 * for without running its event loop: the pool has not yet read that its idle connection is
 * gone, so it lends the dead connection to the next statement, as on a busy process in an outage.
 */
function terminateWhileBlocked(databaseUrl: string, pid: number): void {
  const script = `
    const pg = require('pg')
    const client = new pg.Client({ connectionString: process.env.TARGET })
    client.connect()
      .then(() => client.query('select pg_terminate_backend($1::int, 10000) as gone', [Number(process.env.PID)]))
      .then((result) => { if (!result.rows[0].gone) process.exitCode = 2; return client.end() })`
  execFileSync(process.execPath, ['-e', script], { cwd: projectRoot, env: { ...process.env, TARGET: databaseUrl, PID: String(pid) }, stdio: 'inherit' })
}

describe('pooled connections', needsServer, () => {
  let target: Awaited<ReturnType<typeof emptyServerDatabase>>
  let handle: DatabaseHandle

  before(async () => {
    target = await emptyServerDatabase()
    // One connection: a connection the pool lost track of would leave it none.
    handle = await openDatabase({ databaseUrl: target.url, pgliteDir: undefined, poolSize: 1 })
  })
  after(async () => {
    await handle.close()
    await target.drop()
  })

  it('get a connection lost as a transaction begins back, so the pool keeps lending connections', async () => {
    const [before] = await queryRows<{ pid: number }>(handle.db, sql`select pg_backend_pid() as pid`)
    terminateWhileBlocked(target.url, before!.pid)
    // Its BEGIN is sent on the dead connection and fails: a 503 for whoever asked.
    await assert.rejects(
      handle.db.transaction((tx) => tx.execute(sql`select 1`)),
      (error) => isDatabaseUnavailable(error),
    )
    // The pool lends a new connection, rather than waiting for the lost one until its connect
    // timeout fails the statement. (That timer does not keep Node running: this one does, so a
    // regression fails here with the pool's error, not as a test whose event loop ran dry.)
    const keepRunning = setInterval(() => undefined, 1000)
    try {
      const [after] = await queryRows<{ pid: number }>(handle.db, sql`select pg_backend_pid() as pid`)
      assert.notEqual(after!.pid, before!.pid)
    } finally {
      clearInterval(keepRunning)
    }
  })
})
