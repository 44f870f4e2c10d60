import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import type { EventSubject, ListingFacts } from '../../src/modules/catalogue/listing-facts.js'
import type { ListingFilter } from '../../src/modules/catalogue/listing-filter.js'
import type { SubscribableEvent } from '../../src/modules/events/event-types.js'
import type { PropertySubmission } from '../../src/modules/properties/properties.schemas.js'
import type { WebhookSubscription } from '../../src/modules/webhooks/webhooks.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { ErrorBody, ValidationErrorBody } from '../helpers/responses.js'
import {
  deliveryLog,
  distinctMessages,
  startReceiver,
  startWebhookWorker,
  subscribe,
  verifyDelivery,
  waitForOutboxDrained,
  type Receiver,
  type RunningWorker,
  type WebhookMessage,
} from '../helpers/webhooks.js'

/** Retries 100 ms, then 200 ms after the first failure; each attempt may take 5 s on a busy machine. */
const SCHEDULE = { WEBHOOK_RETRY_SCHEDULE: '100ms,200ms', WEBHOOK_TIMEOUT_MS: '5000' }
const MLS_EVENTS: SubscribableEvent[] = ['mls.new_listing', 'mls.listing_updated', 'mls.listing_removed']

describe('filtered webhook subscriptions', () => {
  let t: TestApp
  let worker: RunningWorker
  let owner: Tenant
  let watcher: Tenant
  let rival: Tenant
  const receivers: Receiver[] = []

  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', ...SCHEDULE })
    worker = startWebhookWorker(t.database.handle, t.config)
    owner = await createTenant(t.app, { email: 'owner@filters.example' })
    watcher = await createTenant(t.app, { email: 'watcher@filters.example' })
    rival = await createTenant(t.app, { email: 'rival@filters.example' })
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

  /** A receiver and a subscription of the watcher to it. */
  async function subscriber(events: SubscribableEvent[], filter?: ListingFilter | null, answer?: Parameters<typeof startReceiver>[0]) {
    const hook = await receiver(answer)
    const subscription = await subscribe(t.app, watcher, { url: hook.url, events, ...(filter === undefined ? {} : { filter }) })
    return { hook, subscription }
  }

  /** Publishes a listing of the owner through the real flow (submission, internal check); its id. */
  async function publish(overrides: Partial<PropertySubmission> = {}): Promise<number> {
    const { id } = await submitProperty(t.app, owner, overrides)
    await runInternalCheck(t.app)
    return id
  }

  /** The facts fan-out matched the listing's publication against, as its mls.new_listing event keeps them. */
  async function factsOf(listingId: number): Promise<ListingFacts> {
    const [row] = await queryRows<{ subject: EventSubject }>(
      t.db,
      sql`select subject from events where type = 'mls.new_listing' and (data->>'id')::int = ${listingId}::int`,
    )
    assert.ok(row?.subject.after, `no mls.new_listing kept the facts of listing ${listingId}`)
    return row.subject.after
  }

  /** The catalogue's view of a listing, the data of an mls.listing_updated. */
  async function catalogueListing(listingId: number): Promise<Record<string, unknown>> {
    const response = await t.app.inject({ method: 'GET', url: `/mls/properties/${listingId}` })
    assert.equal(response.statusCode, 200, response.body)
    return response.json<Record<string, unknown>>()
  }

  /** Records an MLS-wide event through the events module, as the listing's change would, and waits for its deliveries. */
  async function recordListingEvent(type: 'mls.listing_updated' | 'mls.listing_removed', data: unknown, subject: EventSubject): Promise<number> {
    await t.app.services.events.record(t.db, { type, tenantId: owner.tenantId, data, subject })
    const [row] = await queryRows<{ id: number }>(t.db, sql`select max(id)::int as id from events where type = ${type}`)
    await waitForOutboxDrained(t.db)
    return row!.id
  }

  const messages = (hook: Receiver) => distinctMessages(hook.delivered()).map((request) => JSON.parse(request.body) as WebhookMessage)
  const listingIds = (hook: Receiver, type: string) =>
    messages(hook)
      .filter((message) => message.type === type)
      .map((message) => message.data.id)

  it('delivers mls.new_listing to subscriptions whose filter the listing matches, to unfiltered ones, and to no others', async () => {
    const matching = await subscriber(['mls.new_listing'], { city_id: 1, property_type_id: 1, deal_type_id: 1, max_price: 9_000_000, rooms: 2, min_area: 50 })
    const tooCheap = await subscriber(['mls.new_listing'], { min_price: 10_000_000 })
    const otherDeal = await subscriber(['mls.new_listing'], { deal_type_id: 2 })
    const otherAgency = await subscriber(['mls.new_listing'], { tenant_id: rival.tenantId })
    const everything = await subscriber(['mls.new_listing'], null)
    // A filter narrows mls.* events only: the agency's own events come whatever it says.
    const ownHook = await receiver()
    await subscribe(t.app, owner, { url: ownHook.url, events: ['property.published'], filter: { min_price: 50_000_000 } })

    const flat = await publish()
    const dear = await publish({ price: 12_000_000 })
    await waitForOutboxDrained(t.db)

    assert.deepEqual(listingIds(matching.hook, 'mls.new_listing'), [flat])
    assert.deepEqual(listingIds(tooCheap.hook, 'mls.new_listing'), [dear])
    assert.deepEqual(listingIds(otherDeal.hook, 'mls.new_listing'), [])
    assert.deepEqual(listingIds(otherAgency.hook, 'mls.new_listing'), [])
    assert.deepEqual(listingIds(everything.hook, 'mls.new_listing').sort(), [flat, dear].sort())
    assert.deepEqual(
      messages(ownHook)
        .map((message) => message.data.property_id)
        .sort(),
      [flat, dear].sort(),
    )
    // Signed like every delivery, with the event's own webhook-id.
    const [request] = matching.hook.delivered()
    assert.equal(verifyDelivery(matching.subscription.secret, request!).data.id, flat)
    assert.match(String(request!.headers['webhook-id']), /^msg_\d+$/)
  })

  it('matches a bbox or a radius against the listing’s coordinates; a listing without them matches neither', async () => {
    const inBox = await subscriber(['mls.new_listing'], { bbox: '37.5,55.7,37.7,55.8' })
    const nearby = await subscriber(['mls.new_listing'], { near: '55.7558,37.6173', radius_m: 2000 })
    const far = await subscriber(['mls.new_listing'], { near: '59.9386,30.3141', radius_m: 50_000 })

    const located = await publish({ location: { city_id: 1, district_id: 1, address: 'Москва, Тверская, 7', latitude: 55.7577, longitude: 37.6136 } })
    const unlocated = await publish()
    await waitForOutboxDrained(t.db)

    assert.deepEqual(listingIds(inBox.hook, 'mls.new_listing'), [located])
    assert.deepEqual(listingIds(nearby.hook, 'mls.new_listing'), [located])
    assert.deepEqual(listingIds(far.hook, 'mls.new_listing'), [])
    assert.ok(!listingIds(inBox.hook, 'mls.new_listing').includes(unlocated))
  })

  it('announces a listing that stops matching after an edit as mls.listing_removed "unmatched", signed, with a webhook-id of its own kept across retries', async () => {
    const cheapFlats = { deal_type_id: 1, max_price: 9_000_000 }
    let failedOnce = false
    const removals = await subscriber(MLS_EVENTS, cheapFlats, ({ body }) => {
      if (failedOnce || !body.includes('"mls.listing_removed"')) return { status: 204 }
      failedOnce = true
      return { status: 503 }
    })
    const updatesOnly = await subscriber(['mls.listing_updated'], cheapFlats)
    const unfiltered = await subscriber(['mls.listing_updated', 'mls.listing_removed'])
    const neverMatched = await subscriber(MLS_EVENTS, { min_price: 50_000_000 })

    const listing = await publish()
    await waitForOutboxDrained(t.db)
    const published = await factsOf(listing)
    const data = await catalogueListing(listing)

    // The price goes up past the filter: the listing leaves the cheap-flats view.
    const dearer = { ...published, price: 9_500_000 }
    const update = await recordListingEvent('mls.listing_updated', { ...data, price: 9_500_000 }, { before: published, after: dearer })

    const removalRequests = removals.hook.requests.filter((request) => request.body.includes('"mls.listing_removed"'))
    assert.equal(removalRequests.length, 2, 'one failed attempt, then the retry')
    assert.equal(removalRequests[0]!.headers['webhook-id'], `msg_${update}_unmatched`)
    assert.equal(removalRequests[1]!.headers['webhook-id'], removalRequests[0]!.headers['webhook-id'])
    assert.equal(removalRequests[1]!.body, removalRequests[0]!.body)
    const removed = verifyDelivery(removals.subscription.secret, removalRequests[1]!)
    assert.equal(removed.type, 'mls.listing_removed')
    assert.deepEqual(removed.data, { id: listing, reason: 'unmatched' })
    assert.ok(!messages(removals.hook).some((message) => message.type === 'mls.listing_updated'))

    // Without mls.listing_removed, the subscription simply hears no more of it.
    assert.deepEqual(messages(updatesOnly.hook), [])
    // Unfiltered: the update itself, as ever.
    assert.deepEqual(
      messages(unfiltered.hook).map((message) => [message.type, message.data.id]),
      [['mls.listing_updated', listing]],
    )
    assert.deepEqual(messages(neverMatched.hook), [])

    // The log names what was sent, newest first: the removal's two attempts, after the publication.
    const log = await deliveryLog(t.app, watcher, removals.subscription.id)
    assert.deepEqual(
      log.items.map((entry) => [entry.event_id, entry.event_type, entry.status]),
      [
        [update, 'mls.listing_removed', 'succeeded'],
        [update, 'mls.listing_removed', 'failed'],
        [log.items[2]!.event_id, 'mls.new_listing', 'succeeded'],
      ],
    )

    // Back under the bound: it matches again, and arrives as an update.
    await recordListingEvent('mls.listing_updated', data, { before: dearer, after: published })
    assert.deepEqual(listingIds(removals.hook, 'mls.listing_updated'), [listing])
    assert.deepEqual(listingIds(updatesOnly.hook, 'mls.listing_updated'), [listing])

    // Withdrawn while matching: the removal itself, with its own reason, to those it matched.
    await recordListingEvent('mls.listing_removed', { id: listing, reason: 'withdrawn' }, { before: published, after: null })
    const reasons = messages(removals.hook)
      .filter((message) => message.type === 'mls.listing_removed')
      .map((message) => message.data.reason)
    assert.deepEqual(reasons, ['unmatched', 'withdrawn'])
    assert.deepEqual(
      messages(unfiltered.hook).map((message) => message.type),
      ['mls.listing_updated', 'mls.listing_updated', 'mls.listing_removed'],
    )
    assert.deepEqual(messages(neverMatched.hook), [])
  })

  it('PATCH changes a filter, shown by GET, for every event fanned out afterwards; null removes it', async () => {
    const { hook, subscription } = await subscriber(['mls.new_listing'], { min_price: 10_000_000 })
    const missed = await publish()
    await waitForOutboxDrained(t.db)

    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/webhooks/${subscription.id}`,
      headers: watcher.headers,
      payload: { filter: { max_price: 9_000_000, city_id: 1 } },
    })
    assert.equal(patched.statusCode, 200, patched.body)
    const changed = patched.json<WebhookSubscription>()
    assert.deepEqual(changed.filter, { max_price: 9_000_000, city_id: 1 })
    assert.deepEqual(changed.events, ['mls.new_listing'])
    assert.equal(changed.url, hook.url)
    const listed = (await t.app.inject({ method: 'GET', url: '/webhooks', headers: watcher.headers })).json<WebhookSubscription[]>()
    assert.deepEqual(listed.find((entry) => entry.id === subscription.id)?.filter, { max_price: 9_000_000, city_id: 1 })

    const caught = await publish()
    await waitForOutboxDrained(t.db)
    assert.deepEqual(listingIds(hook, 'mls.new_listing'), [caught])
    assert.ok(!listingIds(hook, 'mls.new_listing').includes(missed))

    const cleared = await t.app.inject({ method: 'PATCH', url: `/webhooks/${subscription.id}`, headers: watcher.headers, payload: { filter: null } })
    assert.equal(cleared.statusCode, 200, cleared.body)
    assert.equal(cleared.json<WebhookSubscription>().filter, null)
    const dear = await publish({ price: 30_000_000 })
    await waitForOutboxDrained(t.db)
    assert.deepEqual(listingIds(hook, 'mls.new_listing'), [caught, dear])

    // Other fields, alone: the filter stays as it is.
    const described = await t.app.inject({
      method: 'PATCH',
      url: `/webhooks/${subscription.id}`,
      headers: watcher.headers,
      payload: { description: 'flats', events: ['mls.new_listing', 'mls.listing_removed', 'mls.new_listing'] },
    })
    assert.equal(described.statusCode, 200, described.body)
    assert.equal(described.json<WebhookSubscription>().description, 'flats')
    assert.deepEqual(described.json<WebhookSubscription>().events, ['mls.new_listing', 'mls.listing_removed'])
    assert.equal(described.json<WebhookSubscription>().filter, null)
  })

  it('refuses an invalid filter with 422 naming the parameter, on POST and on PATCH, and changes nothing', async () => {
    const { hook, subscription } = await subscriber(['mls.new_listing'], { rooms: 2 })
    const cases: [unknown, string][] = [
      [{ min_price: 10, max_price: 5 }, 'filter.min_price'],
      [{ min_area: 80, max_area: 40 }, 'filter.min_area'],
      [{ colour: 'red' }, 'filter.colour'],
      [{ sort: 'price_asc' }, 'filter.sort'],
      [{ limit: 10 }, 'filter.limit'],
      [{ rooms: -1 }, 'filter.rooms'],
      [{ city_id: '1' }, 'filter.city_id'],
      [{ property_type_id: 0 }, 'filter.property_type_id'],
      [{ max_price: -5 }, 'filter.max_price'],
      [{ bbox: '37.5,55.7,37.7' }, 'filter.bbox'],
      [{ bbox: '37.7,55.7,37.5,55.8' }, 'filter.bbox'],
      [{ bbox: '37.5,95,37.7,96' }, 'filter.bbox'],
      [{ near: '55.75,37.61' }, 'filter.radius_m'],
      [{ radius_m: 500 }, 'filter.radius_m'],
      [{ near: '95,37.61', radius_m: 500 }, 'filter.near'],
      [{ near: 'here', radius_m: 500 }, 'filter.near'],
      [{ near: '55.75,37.61', radius_m: 0 }, 'filter.radius_m'],
      ['cheap', 'filter'],
    ]
    for (const [filter, parameter] of cases) {
      const created = await t.app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: watcher.headers,
        payload: { url: hook.url, events: ['mls.new_listing'], filter },
      })
      assert.equal(created.statusCode, 422, `POST ${JSON.stringify(filter)}: ${created.body}`)
      assert.ok(created.json<ErrorBody>().detail.includes(`body.${parameter}`), `POST ${JSON.stringify(filter)}: ${created.body}`)
      assert.ok(
        created.json<ValidationErrorBody>().errors.some((error) => error.loc.join('.') === `body.${parameter}`),
        created.body,
      )

      const patched = await t.app.inject({ method: 'PATCH', url: `/webhooks/${subscription.id}`, headers: watcher.headers, payload: { filter } })
      assert.equal(patched.statusCode, 422, `PATCH ${JSON.stringify(filter)}: ${patched.body}`)
      assert.ok(patched.json<ErrorBody>().detail.includes(`body.${parameter}`), `PATCH ${JSON.stringify(filter)}: ${patched.body}`)
    }
    const empty = await t.app.inject({ method: 'PATCH', url: `/webhooks/${subscription.id}`, headers: watcher.headers, payload: {} })
    assert.equal(empty.statusCode, 422, empty.body)
    const listed = (await t.app.inject({ method: 'GET', url: '/webhooks', headers: watcher.headers })).json<WebhookSubscription[]>()
    assert.deepEqual(listed.find((entry) => entry.id === subscription.id)?.filter, { rooms: 2 })
    assert.equal(listed.filter((entry) => entry.url === hook.url).length, 1)
  })

  it('another agency neither sees nor changes a subscription’s filter; PATCH needs a key', async () => {
    const { subscription } = await subscriber(['mls.new_listing'], { rooms: 3 })
    const foreign = await t.app.inject({ method: 'PATCH', url: `/webhooks/${subscription.id}`, headers: rival.headers, payload: { filter: null } })
    assert.equal(foreign.statusCode, 404, foreign.body)
    assert.equal(foreign.json<ErrorBody>().detail, 'Webhook not found')
    const theirs = (await t.app.inject({ method: 'GET', url: '/webhooks', headers: rival.headers })).json<WebhookSubscription[]>()
    assert.ok(!theirs.some((entry) => entry.id === subscription.id))

    const keyless = await t.app.inject({ method: 'PATCH', url: `/webhooks/${subscription.id}`, payload: { filter: null } })
    assert.equal(keyless.statusCode, 401, keyless.body)
    const missing = await t.app.inject({ method: 'PATCH', url: '/webhooks/999999', headers: watcher.headers, payload: { filter: null } })
    assert.equal(missing.statusCode, 404, missing.body)

    const mine = (await t.app.inject({ method: 'GET', url: '/webhooks', headers: watcher.headers })).json<WebhookSubscription[]>()
    assert.deepEqual(mine.find((entry) => entry.id === subscription.id)?.filter, { rooms: 3 })
  })

  it('fans one event out to 2,000 subscriptions, filtered and not, in one batch, each getting what its filter says', async () => {
    const hook = await receiver()
    const { secret } = await subscribe(t.app, watcher, { url: hook.url, events: ['mls.new_listing'], filter: { rooms: 2 } })
    // More subscriptions than an agency may hold: written beside that one, with its sealed secret.
    // Five kinds in turn: cheap, dear, two rooms, one room, no filter.
    const filters = [{ max_price: 9_000_000 }, { min_price: 10_000_000 }, { rooms: 2, city_id: 1 }, { rooms: 1 }, null]
    await t.db.execute(sql`
      insert into webhook_subscriptions (tenant_id, url, events, filter, secret_sealed)
      select ${watcher.tenantId}::int, ${hook.url} || '/' || n, array['mls.new_listing'],
             nullif((${JSON.stringify(filters)}::jsonb) -> (n % 5), 'null'::jsonb), s.secret_sealed
      from generate_series(1, 1999) as n,
           (select secret_sealed from webhook_subscriptions where url = ${hook.url}) as s`)
    const [count] = await queryRows<{ filtered: number; all: number }>(
      t.db,
      sql`select count(*) filter (where filter is not null)::int as filtered, count(*)::int as all from webhook_subscriptions where url like ${`${hook.url}%`}`,
    )
    assert.deepEqual(count, { filtered: 1600, all: 2000 })

    const listing = await publish()
    await waitForOutboxDrained(t.db, 120_000)

    // n % 5: 0 cheap (matches), 1 dear (no), 2 two rooms in city 1 (matches), 3 one room (no), 4 none (matches); plus the first, two rooms.
    const expected = Array.from({ length: 1999 }, (_, i) => i + 1).filter((n) => n % 5 !== 1 && n % 5 !== 3).length + 1
    const [made] = await queryRows<{ deliveries: number; succeeded: number }>(
      t.db,
      sql`select count(*)::int as deliveries, count(*) filter (where d.status = 'succeeded')::int as succeeded
          from webhook_deliveries d join events e on e.id = d.event_id
          join webhook_subscriptions s on s.id = d.subscription_id
          where e.type = 'mls.new_listing' and (e.data->>'id')::int = ${listing}::int and s.url like ${`${hook.url}%`}`,
    )
    assert.deepEqual(made, { deliveries: expected, succeeded: expected })
    const arrived = hook.delivered().filter((request) => request.body.includes('"mls.new_listing"'))
    assert.equal(new Set(arrived.map((request) => request.headers['webhook-id'])).size, 1)
    assert.equal(verifyDelivery(secret, arrived[0]!).data.id, listing)
    // Every path that should have heard of it did, once, and no other.
    const paths = new Set(arrived.map((request) => request.url))
    assert.equal(paths.size, expected)
    assert.ok(!paths.has('/hooks/1') && !paths.has('/hooks/3'))
  })
})
