import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import type { PropertySubmission } from '../../src/modules/properties/properties.schemas.js'
import type { WebhookSubscription } from '../../src/modules/webhooks/webhooks.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { CataloguePage, DeliveryLogPage } from '../helpers/responses.js'
import {
  deliveryLog,
  startReceiver,
  startWebhookWorker,
  subscribe,
  verifyDelivery,
  waitFor,
  type Receiver,
  type RunningWorker,
  type WebhookMessage,
  distinctMessages,
  waitForOutboxDrained,
} from '../helpers/webhooks.js'

/**
 * Retries 100 ms, then 200 ms after the first failure: three attempts in all. Each may take 5 s,
 * so a busy machine does not turn a slow answer into a retry the test did not expect.
 */
const SCHEDULE = { WEBHOOK_RETRY_SCHEDULE: '100ms,200ms', WEBHOOK_TIMEOUT_MS: '5000' }

describe('webhook deliveries', () => {
  let t: TestApp
  let worker: RunningWorker
  const receivers: Receiver[] = []
  let agencies = 0

  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', ...SCHEDULE })
    worker = startWebhookWorker(t.database.handle, t.config)
  })
  after(async () => {
    await worker.stop()
    await t.close()
    await Promise.all(receivers.map((receiver) => receiver.close()))
  })

  async function receiver(answer?: Parameters<typeof startReceiver>[0]) {
    const started = await startReceiver(answer)
    receivers.push(started)
    return started
  }
  const agency = () => createTenant(t.app, { email: `agency-${++agencies}@deliveries.example` })

  /** Submits a listing and runs the internal check: published unless `overrides` break a rule. */
  async function publish(tenant: Tenant, overrides: Partial<PropertySubmission> = {}): Promise<number> {
    const { id } = await submitProperty(t.app, tenant, overrides)
    await runInternalCheck(t.app)
    return id
  }

  /** The received messages about one property, once each (see distinctMessages). */
  const about = (target: Receiver, propertyId: number) =>
    distinctMessages(target.requests).filter((request) => {
      const { data } = JSON.parse(request.body) as WebhookMessage
      return data.id === propertyId || data.property_id === propertyId
    })

  it('delivers mls.new_listing to every agency subscribed, property.* to the owner only, each only what it chose', async () => {
    const [owner, other, watcher, rejectionsOnly] = [await agency(), await agency(), await agency(), await agency()]
    const ownerHook = await receiver()
    const otherHook = await receiver()
    const watcherHook = await receiver()
    const rejectionsHook = await receiver()
    const ownerSub = await subscribe(t.app, owner, { url: ownerHook.url, events: ['mls.new_listing', 'property.published', 'property.rejected'] })
    const otherSub = await subscribe(t.app, other, { url: otherHook.url, events: ['mls.new_listing'] })
    await subscribe(t.app, watcher, { url: watcherHook.url, events: ['property.published', 'property.rejected'] })
    await subscribe(t.app, rejectionsOnly, { url: rejectionsHook.url, events: ['property.rejected'] })

    const published = await publish(owner)
    await waitFor(() => about(ownerHook, published).length === 2 && about(otherHook, published).length === 1, 30_000, 'the deliveries')

    const ownerTypes = about(ownerHook, published)
      .map((request) => verifyDelivery(ownerSub.secret, request).type)
      .sort()
    assert.deepEqual(ownerTypes, ['mls.new_listing', 'property.published'])
    const [announcement] = about(otherHook, published)
    const message = verifyDelivery(otherSub.secret, announcement!)
    assert.equal(message.type, 'mls.new_listing')
    assert.throws(() => verifyDelivery(ownerSub.secret, announcement!), 'signed with the receiving subscription’s own secret')
    // The listing as the catalogue shows it, and never the owner's contacts.
    const catalogue = (await t.app.inject(`/mls/properties?limit=100`)).json<CataloguePage>()
    assert.deepEqual(
      message.data,
      catalogue.items.find((item) => item.id === published),
    )
    for (const secret of ['Иван Петров', '912', 'Звонить', 'owner']) assert.ok(!announcement!.body.includes(secret), secret)
    assert.match(message.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

    const rejected = await publish(owner, { price: 0 })
    await waitFor(() => about(ownerHook, rejected).length === 1, 30_000, 'the rejection')
    const rejection = verifyDelivery(ownerSub.secret, about(ownerHook, rejected)[0]!)
    assert.equal(rejection.type, 'property.rejected')
    assert.equal((rejection.data.reasons as { code: string }[])[0]!.code, 'price_not_positive')

    // Once nothing is left to send, nobody else has heard of either listing, nor ever will.
    await waitForOutboxDrained(t.db)
    assert.equal(about(otherHook, rejected).length, 0)
    assert.equal(about(watcherHook, published).length + about(watcherHook, rejected).length, 0)
    assert.equal(about(rejectionsHook, published).length + about(rejectionsHook, rejected).length, 0)
    assert.equal(about(ownerHook, published).length, 2)
  })

  it('retries a failing receiver on the schedule with the same body and webhook-id, then succeeds', async () => {
    const owner = await agency()
    const hook = await receiver(({ index }) => (index < 2 ? { status: 503, body: 'busy' } : { status: 200 }))
    const subscription = await subscribe(t.app, owner, { url: hook.url, events: ['property.published'] })
    await publish(owner)
    await waitFor(() => hook.requests.length === 3, 30_000, 'three attempts')

    const [first, second, third] = hook.requests
    assert.equal(second!.body, first!.body)
    assert.equal(third!.body, first!.body)
    assert.equal(second!.headers['webhook-id'], first!.headers['webhook-id'])
    assert.equal(third!.headers['webhook-id'], first!.headers['webhook-id'])
    for (const request of hook.requests) verifyDelivery(subscription.secret, request)
    assert.ok(second!.receivedAt - first!.receivedAt >= 85, `first retry after ${second!.receivedAt - first!.receivedAt} ms`)
    assert.ok(third!.receivedAt - second!.receivedAt >= 175, `second retry after ${third!.receivedAt - second!.receivedAt} ms`)

    await waitFor(async () => (await deliveryLog(t.app, owner, subscription.id)).items[0]?.status === 'succeeded', 30_000, 'the success in the log')
    const log = await deliveryLog(t.app, owner, subscription.id)
    assert.equal(log.total, 3)
    assert.deepEqual(
      log.items.map((entry) => [entry.attempt, entry.status, entry.response_status_code, entry.trigger]),
      [
        [3, 'succeeded', 200, 'event'],
        [2, 'failed', 503, 'event'],
        [1, 'failed', 503, 'event'],
      ],
    )
    assert.equal(log.items[1]!.response_body, 'busy')
    assert.match(log.items[1]!.error!, /^http_status: .*503/)
    assert.ok(log.items[1]!.next_attempt_at && log.items[2]!.next_attempt_at)
    assert.equal(log.items[0]!.next_attempt_at, null)
    assert.ok(log.items.every((entry) => entry.event_type === 'property.published' && `msg_${entry.event_id}` === first!.headers['webhook-id']))
  })

  it('calls each attempt by its own outcome: a 500 failed, with the time of the next attempt, and the 200 after it succeeded', async () => {
    const owner = await agency()
    const hook = await receiver(({ index }) => (index === 0 ? { status: 500, body: 'try later' } : { status: 200 }))
    const subscription = await subscribe(t.app, owner, { url: hook.url, events: ['property.published'] })
    await publish(owner)
    await waitFor(async () => (await deliveryLog(t.app, owner, subscription.id)).total === 2, 30_000, 'two log entries')
    const [second, first] = (await deliveryLog(t.app, owner, subscription.id)).items
    assert.deepEqual([first!.attempt, first!.status, first!.response_status_code, first!.response_body], [1, 'failed', 500, 'try later'])
    assert.ok(first!.next_attempt_at, 'the failed attempt says when the next is due')
    assert.ok(Date.parse(second!.created_at) >= Date.parse(first!.next_attempt_at), 'the second attempt was made when the first said')
    assert.deepEqual([second!.attempt, second!.status, second!.response_status_code, second!.next_attempt_at], [2, 'succeeded', 200, null])
  })

  it('gives up after the last retry and says so in the log; the subscription stays on', async () => {
    const owner = await agency()
    const hook = await receiver(() => ({ status: 500, body: 'x'.repeat(10_000) }))
    const subscription = await subscribe(t.app, owner, { url: hook.url, events: ['property.published'] })
    await publish(owner)
    await waitFor(async () => (await deliveryLog(t.app, owner, subscription.id)).total === 3, 30_000, 'the final failure')
    await waitForOutboxDrained(t.db)
    assert.equal(hook.requests.length, 3)
    const log = await deliveryLog(t.app, owner, subscription.id)
    // Every attempt failed; only the last was not followed by another.
    assert.deepEqual(
      log.items.map((entry) => [entry.attempt, entry.status, entry.next_attempt_at === null]),
      [
        [3, 'failed', true],
        [2, 'failed', false],
        [1, 'failed', false],
      ],
    )
    assert.equal(log.items[0]!.response_body!.length, 4096, 'the first 4 KiB of the answer')
    const [listed] = (await t.app.inject({ method: 'GET', url: '/webhooks', headers: owner.headers })).json<WebhookSubscription[]>()
    assert.equal(listed!.is_active, true)
  })

  it('switches a subscription off when the receiver answers 410 Gone', async () => {
    const owner = await agency()
    const hook = await receiver(() => ({ status: 410 }))
    const subscription = await subscribe(t.app, owner, { url: hook.url, events: ['property.published'] })
    await publish(owner)
    await waitFor(() => hook.requests.length === 1, 30_000, 'the attempt')
    await waitFor(async () => (await deliveryLog(t.app, owner, subscription.id)).total === 1, 30_000, 'the log entry')
    const [entry] = (await deliveryLog(t.app, owner, subscription.id)).items
    assert.equal(entry!.status, 'failed')
    assert.equal(entry!.response_status_code, 410)
    const [listed] = (await t.app.inject({ method: 'GET', url: '/webhooks', headers: owner.headers })).json<WebhookSubscription[]>()
    assert.equal(listed!.is_active, false)
    assert.match(listed!.disabled_reason!, /410/)
    assert.ok(listed!.disabled_at)

    // Later events are not sent to it.
    await publish(owner)
    await waitForOutboxDrained(t.db)
    assert.equal(hook.requests.length, 1)
  })

  it('switches off a subscription that has not succeeded for 5 days, and reports why', async () => {
    const owner = await agency()
    const hook = await receiver(() => ({ status: 500 }))
    const subscription = await subscribe(t.app, owner, { url: hook.url, events: ['property.published'] })
    await t.db.execute(sql`update webhook_subscriptions set failing_since = now() - interval '5 days 1 minute' where id = ${subscription.id}::int`)
    await publish(owner)
    await waitFor(() => hook.requests.length === 1, 30_000, 'the attempt')
    await waitFor(
      async () => (await t.app.inject({ method: 'GET', url: '/webhooks', headers: owner.headers })).json<WebhookSubscription[]>()[0]!.is_active === false,
      2000,
      'the switch-off',
    )
    const [listed] = (await t.app.inject({ method: 'GET', url: '/webhooks', headers: owner.headers })).json<WebhookSubscription[]>()
    assert.match(listed!.disabled_reason!, /5 days/)
    // The retry it had scheduled is given up, and the log says so.
    await waitForOutboxDrained(t.db)
    assert.equal(hook.requests.length, 1)
    const [entry] = (await deliveryLog(t.app, owner, subscription.id)).items
    assert.equal(entry!.status, 'failed')
    assert.equal(entry!.next_attempt_at, null)
  })

  it('counts the 5 days afresh from a new url: the old receiver’s failures do not switch the new one off', async () => {
    const owner = await agency()
    const old = await receiver(() => ({ status: 500 }))
    const subscription = await subscribe(t.app, owner, { url: old.url, events: ['property.published'] })
    await t.db.execute(sql`update webhook_subscriptions set failing_since = now() - interval '5 days 1 minute' where id = ${subscription.id}::int`)
    const moved = await receiver(() => ({ status: 503 }))
    const patch = await t.app.inject({ method: 'PATCH', url: `/webhooks/${subscription.id}`, headers: owner.headers, payload: { url: moved.url } })
    assert.equal(patch.statusCode, 200, patch.body)
    await publish(owner)
    await waitFor(async () => (await deliveryLog(t.app, owner, subscription.id)).total >= 1, 30_000, 'the first attempt at the new url')
    const shown = await t.app.inject({ url: `/webhooks/${subscription.id}`, headers: owner.headers })
    assert.equal(shown.json<WebhookSubscription>().is_active, true, shown.body)
    assert.equal(old.requests.length, 0)
  })

  it('keeps the failing streak when a PATCH gives the url the subscription already has, however it is spelled', async () => {
    const owner = await agency()
    const hook = await receiver(() => ({ status: 500 }))
    const subscription = await subscribe(t.app, owner, { url: hook.url, events: ['property.published'] })
    await t.db.execute(sql`update webhook_subscriptions set failing_since = now() - interval '3 days' where id = ${subscription.id}::int`)
    const { origin, pathname } = new URL(hook.url)
    for (const url of [hook.url, `${origin.toUpperCase()}${pathname}`, `${origin}/./${pathname.slice(1)}`]) {
      const patch = await t.app.inject({
        method: 'PATCH',
        url: `/webhooks/${subscription.id}`,
        headers: owner.headers,
        payload: { url, description: 'the same receiver' },
      })
      assert.equal(patch.statusCode, 200, patch.body)
      assert.equal(patch.json<WebhookSubscription>().url, url, 'kept as written')
      const [row] = await queryRows<{ days: number }>(
        t.db,
        sql`select extract(epoch from now() - failing_since) / 86400 as days from webhook_subscriptions where id = ${subscription.id}::int`,
      )
      assert.ok(Number(row?.days) > 2.9, `the streak was reset by ${url}: ${JSON.stringify(row)}`)
    }
  })

  it('a success ends the failing streak that the 5 days are counted from', async () => {
    const owner = await agency()
    const hook = await receiver(({ index }) => (index === 0 ? { status: 500 } : { status: 200 }))
    const subscription = await subscribe(t.app, owner, { url: hook.url, events: ['property.published'] })
    await publish(owner)
    await waitFor(() => hook.requests.length === 1, 30_000, 'the failure')
    await waitFor(
      async () => {
        const [row] = await queryRows<{ failing: boolean }>(
          t.db,
          sql`select failing_since is not null as failing from webhook_subscriptions where id = ${subscription.id}::int`,
        )
        return row!.failing
      },
      2000,
      'the failing streak',
    )
    await waitFor(() => hook.requests.length === 2, 30_000, 'the retry')
    await waitFor(
      async () => {
        const [row] = await queryRows<{ failing: boolean }>(
          t.db,
          sql`select failing_since is not null as failing from webhook_subscriptions where id = ${subscription.id}::int`,
        )
        return !row!.failing
      },
      2000,
      'the streak to end',
    )
  })

  it('honours Retry-After: the next attempt waits as long as the receiver asked, not the schedule', async () => {
    const owner = await agency()
    const hook = await receiver(({ index }) => (index === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }))
    const subscription = await subscribe(t.app, owner, { url: hook.url, events: ['property.published'] })
    await publish(owner)
    await waitFor(() => hook.requests.length === 2, 30_000, 'the retry')
    const wait = hook.requests[1]!.receivedAt - hook.requests[0]!.receivedAt
    assert.ok(wait >= 950, `retried after ${wait} ms; asked 1 s, the schedule said 100 ms`)
    const log = await deliveryLog(t.app, owner, subscription.id)
    const first = log.items.find((entry) => entry.attempt === 1)!
    assert.ok(Date.parse(first.next_attempt_at!) - Date.parse(first.created_at) >= 950)
  })
})

describe('webhook deliveries that time out', () => {
  it('fails an attempt that takes longer than WEBHOOK_TIMEOUT_MS, and a redirect, without following it', async () => {
    const t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms,100ms', WEBHOOK_TIMEOUT_MS: '500' })
    const worker = startWebhookWorker(t.database.handle, t.config)
    const target = await startReceiver()
    let calls = 0
    const hook = await startReceiver(() => {
      calls++
      return calls === 1 ? 'hang' : calls === 2 ? { status: 503, stall: true } : { status: 302, headers: { location: target.url } }
    })
    try {
      const owner = await createTenant(t.app, { email: 'timeouts@agency.example' })
      const subscription = await subscribe(t.app, owner, { url: hook.url, events: ['property.published'] })
      await submitProperty(t.app, owner)
      await runInternalCheck(t.app)
      await waitFor(async () => (await deliveryLog(t.app, owner, subscription.id)).total >= 3, 30_000, 'three attempts')
      const log = await deliveryLog(t.app, owner, subscription.id)
      const [redirected, stalled, timedOut] = log.items.slice(-3) as [(typeof log.items)[0], (typeof log.items)[0], (typeof log.items)[0]]
      assert.equal(timedOut.attempt, 1)
      assert.equal(timedOut.error, 'timeout: No complete answer from 127.0.0.1 within 500 ms.')
      assert.equal(timedOut.response_status_code, null)
      assert.equal(stalled.attempt, 2)
      assert.equal(stalled.response_status_code, 503)
      assert.equal(stalled.error, 'timeout: 127.0.0.1 answered 503, but the rest of its answer did not arrive within 500 ms.')
      // Cut at 500 ms; the upper bound leaves a busy machine room, and is still far below a hang.
      assert.ok(timedOut.duration_ms >= 450 && timedOut.duration_ms < 5000, `${timedOut.duration_ms} ms`)
      assert.equal(redirected.attempt, 3)
      assert.equal(redirected.response_status_code, 302)
      assert.match(redirected.error!, /^http_status: /)
      assert.equal(target.requests.length, 0, 'the redirect was not followed')
    } finally {
      await worker.stop()
      await t.close()
      await Promise.all([hook.close(), target.close()])
    }
  })
})

describe('webhook log entries of receivers that break off', () => {
  let t: TestApp
  let owner: Tenant
  const receivers: Receiver[] = []
  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', WEBHOOK_TIMEOUT_MS: '5000' })
    owner = await createTenant(t.app, { email: 'breaking-off@agency.example' })
  })
  after(async () => {
    await t.close()
    await Promise.all(receivers.map((receiver) => receiver.close()))
  })

  /** The log entry of a test event sent to a receiver that answers `answer`. */
  async function attemptAgainst(answer: Parameters<typeof startReceiver>[0]) {
    const receiver = await startReceiver(answer)
    receivers.push(receiver)
    const subscription = await subscribe(t.app, owner, { url: receiver.url, events: ['property.published'] })
    const response = await t.app.inject({ method: 'POST', url: `/webhooks/${subscription.id}/test`, headers: owner.headers })
    assert.equal(response.statusCode, 200, response.body)
    return response.json<DeliveryLogPage['items'][number]>()
  }

  it('says the receiver closed the connection, or answered what is not HTTP, rather than that it could not be reached', async () => {
    const closed = await attemptAgainst(() => 'close')
    assert.equal(closed.status, 'failed')
    assert.match(closed.error!, /^connection: 127\.0\.0\.1 closed the connection without answering/)
    const garbled = await attemptAgainst(() => 'not-http')
    assert.equal(garbled.status, 'failed')
    assert.match(garbled.error!, /^connection: 127\.0\.0\.1 answered with something that is not HTTP/)
  })

  it('keeps the status a receiver answered when the rest of its answer breaks off: a 2xx is delivered, another status fails', async () => {
    const accepted = await attemptAgainst(() => ({ status: 200, breakOff: true }))
    assert.deepEqual([accepted.status, accepted.response_status_code, accepted.error, accepted.response_body], ['succeeded', 200, null, 'partial'])
    const unavailable = await attemptAgainst(() => ({ status: 503, breakOff: true }))
    assert.deepEqual([unavailable.status, unavailable.response_status_code], ['failed', 503])
    assert.match(unavailable.error!, /^connection: 127\.0\.0\.1 answered 503, then the connection broke off before the end of the answer/)
    // What arrived of its body stays in the log, often the receiver's own word on what went wrong.
    assert.equal(unavailable.response_body, 'partial')
  })

  it('logs the first 4 KiB of an answer without the character the limit cuts, and null for no body at all', async () => {
    // 4,095 ASCII bytes, then "é" (two bytes) across the 4,096-byte limit.
    const long = await attemptAgainst(() => ({ status: 500, body: `${'a'.repeat(4095)}é and more` }))
    assert.equal(long.response_body, 'a'.repeat(4095))
    const empty = await attemptAgainst(() => ({ status: 204 }))
    assert.deepEqual([empty.status, empty.response_status_code, empty.response_body], ['succeeded', 204, null])
  })
})

describe('webhook deliveries with the private-network rule on', () => {
  it('refuses at delivery time a receiver that resolves to loopback (a URL allowed before, or DNS rebinding)', async () => {
    const t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', ...SCHEDULE })
    const hook = await startReceiver()
    const worker = startWebhookWorker(t.database.handle, { ...t.config, allowPrivateNetwork: false })
    try {
      const owner = await createTenant(t.app, { email: 'rebinding@agency.example' })
      const subscription = await subscribe(t.app, owner, { url: hook.url.replace('127.0.0.1', 'localhost'), events: ['property.published'] })
      await submitProperty(t.app, owner)
      await runInternalCheck(t.app)
      await waitFor(async () => (await deliveryLog(t.app, owner, subscription.id)).total >= 1, 30_000, 'the attempt')
      const [entry] = (await deliveryLog(t.app, owner, subscription.id)).items
      assert.match(entry!.error!, /^blocked_address: /)
      assert.equal(entry!.response_status_code, null)
      assert.equal(hook.requests.length, 0)
    } finally {
      await worker.stop()
      await t.close()
      await hook.close()
    }
  })
})

describe('webhook log entries of deliveries given up with their subscription', () => {
  // Retries an hour apart never come due by themselves: the test makes each attempt happen.
  const ENV = { ALLOW_PRIVATE_NETWORK: 'true', WEBHOOK_RETRY_SCHEDULE: '1h,1h', WEBHOOK_TIMEOUT_MS: '5000' }

  it('keep every failure; only the last entry of each given-up delivery loses its next attempt', async () => {
    const t = await buildTestApp(ENV)
    const hook = await startReceiver(() => ({ status: 500 }))
    try {
      const owner = await createTenant(t.app, { email: 'switched-off@agency.example' })
      const subscription = await subscribe(t.app, owner, { url: hook.url, events: ['property.published'] })
      /** Fans out new events and makes one attempt of every due delivery, as the worker's jobs would. */
      const deliverOnce = async () => {
        await t.app.services.webhooks.fanOut(100)
        const claimed = await t.app.services.webhooks.claimDue({ limit: 100, perSubscription: 100, busySubscriptions: [] })
        await Promise.all(claimed.map((delivery) => t.app.services.webhooks.attempt(delivery)))
        return claimed.length
      }
      const publishOne = async () => {
        await submitProperty(t.app, owner)
        await runInternalCheck(t.app)
        assert.equal(await deliverOnce(), 1)
      }
      await publishOne()
      await publishOne()
      const [earlier, later] = (await deliveryLog(t.app, owner, subscription.id)).items.reverse()
      assert.ok(earlier!.next_attempt_at && later!.next_attempt_at, 'both failed and are to be retried')

      // The earlier delivery's retry comes due after 5 days without a success: it fails again,
      // the subscription is switched off, and both deliveries are given up.
      await t.db.execute(sql`update webhook_subscriptions set failing_since = now() - interval '5 days 1 minute' where id = ${subscription.id}::int`)
      await t.db.execute(sql`update webhook_deliveries set next_attempt_at = now() where event_id = ${earlier!.event_id}::bigint`)
      assert.equal(await deliverOnce(), 1)
      const [listed] = (await t.app.inject({ method: 'GET', url: '/webhooks', headers: owner.headers })).json<WebhookSubscription[]>()
      assert.equal(listed!.is_active, false)

      const log = (await deliveryLog(t.app, owner, subscription.id)).items
      assert.deepEqual(
        log.map((entry) => [entry.event_id, entry.attempt, entry.status, entry.next_attempt_at]),
        [
          [earlier!.event_id, 2, 'failed', null],
          [later!.event_id, 1, 'failed', null],
          [earlier!.event_id, 1, 'failed', earlier!.next_attempt_at],
        ],
      )
      const [pending] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from webhook_deliveries where status = 'pending'`)
      assert.equal(pending!.n, 0)
    } finally {
      await t.close()
      await hook.close()
    }
  })
})
