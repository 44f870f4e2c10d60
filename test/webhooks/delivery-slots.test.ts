import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it, type TestContext } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/factories.js'
import { startReceiver, startWebhookWorker, subscribe, waitFor, type RunningWorker, writePublishedEvents } from '../helpers/webhooks.js'

/** A receiver that never answers: it holds every request until its sender gives up, or the test ends. */
async function startHoldingReceiver() {
  const held: ServerResponse[] = []
  /** When the first held request was given up by its sender (the attempt timed out). */
  let firstAbandonedAt: number | undefined
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      held.push(response)
    })
    response.on('close', () => {
      if (!response.writableEnded) firstAbandonedAt ??= Date.now()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    held: () => held.length,
    firstAbandonedAt: () => firstAbandonedAt,
    async close() {
      for (const response of held.splice(0)) response.destroy()
      server.closeAllConnections()
      server.close()
    },
  }
}

describe('the delivery job: a slow receiver holds its own slots, never the queue', () => {
  let t: TestApp
  let agencies = 0

  before(async () => {
    // An attempt is given 8 s; the receivers below either answer at once or hold the request.
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', WEBHOOK_TIMEOUT_MS: '8000', WEBHOOK_RETRY_SCHEDULE: '1h' })
  })
  after(async () => {
    await t.close()
  })

  const newAgency = () => createTenant(t.app, { email: `slots-${++agencies}@agency.example` })

  /** One worker per test, stopped when the test ends, once `receivers` have closed (so nothing is held). */
  function startWorker(test: TestContext, ...receivers: { close(): Promise<void> }[]): RunningWorker {
    const worker = startWebhookWorker(t.database.handle, t.config)
    test.after(async () => {
      for (const receiver of receivers) await receiver.close()
      await worker.stop()
    })
    return worker
  }

  // docs/architecture.md: "a slow or dead receiver holds at most 15 slots per worker, never the
  // queue". An agency whose receiver hangs must not hold back another agency's
  // delivery until the hanging attempt times out.
  it("delivers another agency's event while one receiver holds an attempt, not after its timeout", async (test) => {
    const slowAgency = await newAgency()
    const fastAgency = await newAgency()
    const slow = await startHoldingReceiver()
    const fast = await startReceiver(() => ({ status: 200 }))
    await subscribe(t.app, slowAgency, { url: slow.url, events: ['property.published'] })
    await subscribe(t.app, fastAgency, { url: fast.url, events: ['property.published'] })
    startWorker(test, slow, fast)

    await writePublishedEvents(t.db, slowAgency, 1)
    await waitFor(() => slow.held() === 1, 20_000, 'the slow receiver to hold the first attempt')

    const written = Date.now()
    await writePublishedEvents(t.db, fastAgency, 1)
    // The fast receiver gets its event, before the held attempt times out or after.
    await waitFor(() => fast.requests.length > 0, 30_000, 'a delivery to the fast receiver')
    const abandoned = slow.firstAbandonedAt()
    const fastAt = fast.requests[0]!.receivedAt
    assert.ok(
      abandoned === undefined || fastAt < abandoned,
      `the fast receiver got its event ${fastAt - written} ms after it was written, only once the held attempt to the other agency timed out`,
    )
  })
})
