import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it, type TestContext } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/factories.js'
import { startReceiver, startWebhookWorker, subscribe, waitFor, type RunningWorker, writePublishedEvents } from '../helpers/webhooks.js'

/**
 * A receiver whose requests stay unanswered until the test answers them, one by one: it knows
 * how many it holds at any moment, so how many attempts a worker has in flight to it.
 */
async function startHoldingReceiver() {
  const held: ServerResponse[] = []
  let received = 0
  let mostAtOnce = 0
  /** When the first held request was given up by its sender (the attempt timed out). */
  let firstAbandonedAt: number | undefined
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      received++
      held.push(response)
      mostAtOnce = Math.max(mostAtOnce, held.length)
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
    received: () => received,
    mostAtOnce: () => mostAtOnce,
    firstAbandonedAt: () => firstAbandonedAt,
    /** Answers the oldest held request 200. */
    answerOne() {
      held.shift()?.writeHead(200).end('ok')
    },
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

  // docs/architecture.md: "A worker keeps at most WEBHOOK_DELIVERY_CONCURRENCY (64) attempts in
  // flight, at most 8 of them to one subscription, so a slow or dead receiver holds 8 slots per
  // worker, not the queue." An agency whose receiver hangs must not hold back another agency's
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

  // docs/operations.md, WEBHOOK_DELIVERY_CONCURRENCY: "delivery attempts one worker process has
  // in flight at once, at most 8 of them to one subscription".
  it('never has more than 8 attempts in flight to one subscription', async (test) => {
    const agency = await newAgency()
    const receiver = await startHoldingReceiver()
    const hook = await subscribe(t.app, agency, { url: receiver.url, events: ['property.published'] })
    startWorker(test, receiver)

    // Five attempts in flight, held by the receiver.
    await writePublishedEvents(t.db, agency, 5)
    await waitFor(() => receiver.held() === 5, 20_000, 'five attempts held')
    // Ten more events for the same subscription, fanned out while those five are held.
    await writePublishedEvents(t.db, agency, 10)
    await waitFor(
      async () => {
        const [row] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from webhook_deliveries where subscription_id = ${hook.id}::int`)
        return row!.n === 15
      },
      20_000,
      'the ten new events to be fanned out',
    )
    // One held attempt ends: the worker may start one more (8 in flight at most: 5, then up to
    // 3 more as soon as the new deliveries are due, then 1 for the one that ended).
    await waitFor(() => receiver.held() >= 5, 20_000, 'five attempts held')
    receiver.answerOne()
    await waitFor(() => receiver.received() >= 9, 20_000, 'the worker to send more attempts after one ended')
    // Every attempt of one claim is leased in the same statement: what the database shows
    // leased now is what the worker has in flight to this subscription.
    const [leased] = await queryRows<{ n: number }>(
      t.db,
      sql`select count(*)::int as n from webhook_deliveries where subscription_id = ${hook.id}::int and status = 'pending' and lease_token is not null`,
    )
    await waitFor(() => receiver.held() === leased!.n, 20_000, 'every leased attempt to reach the receiver')
    assert.ok(leased!.n <= 8, `${leased!.n} attempts leased at once to one subscription`)
    assert.ok(receiver.mostAtOnce() <= 8, `${receiver.mostAtOnce()} requests in flight at once to one subscription`)
  })
})
