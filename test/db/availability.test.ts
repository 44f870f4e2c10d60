import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DatabaseAvailability } from '../../src/db/availability.js'

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
})
