import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { DeliveryLogPage } from '../helpers/responses.js'
import { deliveryLog, startReceiver, subscribe, type Receiver } from '../helpers/webhooks.js'

type Entry = DeliveryLogPage['items'][number]

// Retries an hour apart never come due by themselves: each attempt is made by the test, as the worker's jobs would.
const ENV = { ALLOW_PRIVATE_NETWORK: 'true', WEBHOOK_RETRY_SCHEDULE: '1h,1h', WEBHOOK_TIMEOUT_MS: '1000' }
const HOUR = 3_600_000

/**
 * When a failed delivery is tried again, as the receiver's Retry-After asks: every attempt is made
 * here, as the worker's jobs make them, and the retry read from the log's next_attempt_at.
 */
describe('Retry-After from a receiver', () => {
  let t: TestApp
  const receivers: Receiver[] = []
  let agencies = 0
  before(async () => {
    t = await buildTestApp(ENV)
  })
  after(async () => {
    await t.close()
    await Promise.all(receivers.map((r) => r.close()))
  })
  const agency = () => createTenant(t.app, { email: `retry-after-${++agencies}@delivery.example` })

  /** Fans out new events and makes one attempt of every due delivery. */
  async function deliverOnce(): Promise<number> {
    await t.app.services.webhooks.fanOut(100)
    const claimed = await t.app.services.webhooks.claimDue({ limit: 100, perSubscription: 100, busySubscriptions: [] })
    await Promise.all(claimed.map((delivery) => t.app.services.webhooks.attempt(delivery)))
    return claimed.length
  }

  /** The first attempt's log entry of a property.published delivery to a receiver answering `answer`. */
  async function firstAttemptAgainst(answer: Parameters<typeof startReceiver>[0]): Promise<{ entry: Entry; tenant: Tenant; subscriptionId: number }> {
    const receiver = await startReceiver(answer)
    receivers.push(receiver)
    const tenant = await agency()
    const subscription = await subscribe(t.app, tenant, { url: receiver.url, events: ['property.published'] })
    await submitProperty(t.app, tenant)
    await runInternalCheck(t.app)
    assert.equal(await deliverOnce(), 1)
    const log = await deliveryLog(t.app, tenant, subscription.id)
    assert.equal(log.total, 1)
    return { entry: log.items[0]!, tenant, subscriptionId: subscription.id }
  }
  const delayOf = (entry: Entry) => Date.parse(entry.next_attempt_at!) - Date.parse(entry.created_at)

  it('ignores a Retry-After that is neither delay-seconds nor an HTTP-date, instead of postponing the retry by a day', async () => {
    for (const garbage of ['7200.5', 'max-age=7200', 'after 7200', 'Tue, 1 Dec 7200 00:00:00']) {
      const { entry } = await firstAttemptAgainst(() => ({ status: 503, headers: { 'retry-after': garbage } }))
      assert.equal(entry.status, 'failed')
      assert.ok(entry.next_attempt_at, 'a retry is scheduled')
      const delay = delayOf(entry)
      assert.ok(delay < 3 * HOUR, `Retry-After: ${garbage} moved the retry ${Math.round(delay / HOUR)} h out; the schedule says 1 h ±10 %`)
    }
  })

  it('reads each form of HTTP-date, the obsolete ones too', async () => {
    const inThreeHours = new Date(Date.now() + 3 * HOUR)
    const [day, date, month, year, time] = inThreeHours.toUTCString().split(/[ ,]+/) as [string, string, string, string, string]
    const weekday = { Mon: 'Monday', Tue: 'Tuesday', Wed: 'Wednesday', Thu: 'Thursday', Fri: 'Friday', Sat: 'Saturday', Sun: 'Sunday' }[day]!
    for (const form of [
      inThreeHours.toUTCString(),
      `${weekday}, ${date}-${month}-${year.slice(2)} ${time} GMT`,
      `${day} ${month} ${date.replace(/^0/, ' ')} ${time} ${year}`,
    ]) {
      const { entry } = await firstAttemptAgainst(() => ({ status: 503, headers: { 'retry-after': form } }))
      assert.ok(delayOf(entry) >= 2.5 * HOUR, `Retry-After: ${form} gave a retry after ${Math.round(delayOf(entry) / 60000)} min`)
    }
  })

  it('honours Retry-After when the answer breaks off or stalls after its status: the status and its headers arrived', async () => {
    const broken = await firstAttemptAgainst(() => ({ status: 503, headers: { 'retry-after': '10800' }, breakOff: true }))
    assert.equal(broken.entry.response_status_code, 503)
    assert.ok(delayOf(broken.entry) >= 3 * HOUR - 5000, `retry due after ${Math.round(delayOf(broken.entry) / 60000)} min; the receiver asked 180`)
    const stalled = await firstAttemptAgainst(() => ({ status: 429, headers: { 'retry-after': '10800' }, stall: true }))
    assert.equal(stalled.entry.response_status_code, 429)
    assert.ok(delayOf(stalled.entry) >= 3 * HOUR - 5000, `retry due after ${Math.round(delayOf(stalled.entry) / 60000)} min; the receiver asked 180`)
  })
})
