import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { DatabaseAvailability, isDatabaseUnavailable } from '../../src/db/availability.js'
import { openDatabase } from '../../src/db/client.js'
import { freePort } from '../helpers/service-process.js'

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })

/** A probe that fails until `back` is called, as a database that is down until it is restarted. */
function databaseDownUntilBack() {
  let up = false
  let probes = 0
  return {
    probe: async () => {
      probes++
      if (!up) throw refused
    },
    back: () => (up = true),
    probes: () => probes,
  }
}

describe('database availability', () => {
  it('has nothing to wait for while no outage is known', async () => {
    const availability = new DatabaseAvailability(async () => undefined)
    assert.equal(availability.isDown, false)
    await availability.whenAvailable()
  })

  it('ends an outage, and the waits for its end, when the probe reaches the database again', async () => {
    const database = databaseDownUntilBack()
    const availability = new DatabaseAvailability(database.probe)
    // The probe's timer does not keep Node running (a process is kept by its server or worker): this does.
    const keepRunning = setInterval(() => undefined, 1000)
    try {
      availability.failed(refused)
      availability.failed(refused)
      assert.equal(availability.isDown, true)
      let ended = false
      const waiting = availability.whenAvailable().then(() => (ended = true))
      // Down through a failed probe (probes run every second), then back.
      while (database.probes() === 0) await new Promise((resolve) => setTimeout(resolve, 50))
      assert.equal(ended, false)
      database.back()
      await waiting
      assert.equal(availability.isDown, false)
    } finally {
      clearInterval(keepRunning)
      availability.close()
    }
  })

  it('ends the waits when it is closed during an outage', async () => {
    const availability = new DatabaseAvailability(databaseDownUntilBack().probe)
    availability.failed(refused)
    const waiting = availability.whenAvailable()
    availability.close()
    await waiting
  })

  it('takes a connection the process could not open for the database gone, and a client that went away for nothing of the kind', async () => {
    const nobody = await freePort()
    const socket = connect(nobody, '127.0.0.1')
    const [refusedHere] = (await once(socket, 'error')) as [Error]
    assert.equal(isDatabaseUnavailable(refusedHere), true, String(refusedHere))
    assert.equal(isDatabaseUnavailable(new Error('Failed query: select 1', { cause: refusedHere })), true)

    // A request whose client disconnects mid-body fails with ECONNRESET too, on the server's side.
    const server = createServer()
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const requestError = new Promise<Error>((resolve) => server.on('request', (request) => request.on('error', resolve)))
      const client = connect((server.address() as AddressInfo).port, '127.0.0.1')
      client.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nhalf')
      server.once('request', () => client.destroy())
      const aborted = await requestError
      assert.equal((aborted as NodeJS.ErrnoException).code, 'ECONNRESET')
      assert.equal(isDatabaseUnavailable(aborted), false)
    } finally {
      server.close()
    }
  })
})

describe('opening a PostgreSQL that cannot be used', () => {
  it('says in one line where and why, without the credentials: the driver’s own reason, not a failed statement', async () => {
    const port = await freePort()
    await assert.rejects(openDatabase({ databaseUrl: `postgres://mls:s3cret-password@127.0.0.1:${port}/mls`, pgliteDir: undefined }), (error: Error) => {
      assert.match(error.message, new RegExp(`^PostgreSQL at 127\\.0\\.0\\.1:${port}/mls cannot be used: .*ECONNREFUSED`))
      assert.doesNotMatch(error.message, /s3cret|params:|\n/)
      assert.ok(isDatabaseUnavailable(error), 'still taken for the database being unreachable')
      return true
    })
  })
})
