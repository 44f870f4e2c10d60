import assert from 'node:assert/strict'
import { after, afterEach, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import pg from 'pg'
import { queryRows } from '../../src/db/client.js'
import type { CatalogueDetail } from '../../src/modules/catalogue/catalogue.schemas.js'
import type { SubscribableEvent } from '../../src/modules/events/event-types.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import type { AdminTenant, CreatedApiKey } from '../../src/modules/tenants/tenants.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { engine } from '../helpers/database.js'
import { adminHeaders, createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { CataloguePage, ErrorBody, ListingUnderReviewPage, PropertyPage } from '../helpers/responses.js'
import {
  deliveryLog,
  distinctMessages,
  startReceiver,
  startWebhookWorker,
  subscribe,
  waitFor,
  waitForOutboxDrained,
  type Receiver,
  type RunningWorker,
  type WebhookMessage,
} from '../helpers/webhooks.js'

const INVALID_KEY = '{"detail":"Invalid or missing API key"}'

describe('suspending an agency', () => {
  let t: TestApp
  let worker: RunningWorker
  const receivers: Receiver[] = []

  before(async () => {
    // A failed delivery is retried only after an hour: whatever is still pending meanwhile is
    // what a suspension found pending.
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', WEBHOOK_RETRY_SCHEDULE: '1h', WEBHOOK_TIMEOUT_MS: '5000' })
    worker = startWebhookWorker(t.database.handle, t.config)
  })
  after(async () => {
    await worker.stop()
    await t.close()
    await Promise.all(receivers.map((receiver) => receiver.close()))
  })

  const suspend = (tenantId: number | string, headers: Record<string, string> = adminHeaders) =>
    t.app.inject({ method: 'POST', url: `/admin/tenants/${tenantId}/suspend`, headers })
  const unsuspend = (tenantId: number | string, headers: Record<string, string> = adminHeaders) =>
    t.app.inject({ method: 'POST', url: `/admin/tenants/${tenantId}/unsuspend`, headers })
  const adminView = async (response: Awaited<ReturnType<typeof suspend>>) => {
    assert.equal(response.statusCode, 200, response.body)
    return response.json<AdminTenant>()
  }
  const me = (key: string) => t.app.inject({ url: '/tenants/me', headers: { 'x-api-key': key } })
  const get = async <T>(url: string, headers: Record<string, string> = {}): Promise<T> => {
    const response = await t.app.inject({ url, headers })
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`)
    return response.json<T>()
  }
  const catalogueOf = (tenant: Tenant) => get<CataloguePage>(`/mls/properties?tenant_id=${tenant.tenantId}`)
  async function publish(tenant: Tenant): Promise<number> {
    const { id } = await submitProperty(t.app, tenant)
    await runInternalCheck(t.app)
    return id
  }

  it('refuses its keys and takes its listings out of the catalogue; unsuspended, all is as it was', async () => {
    const agency = await createTenant(t.app)
    const other = await createTenant(t.app)
    const spare = await t.app.inject({ method: 'POST', url: '/tenants/me/api-keys', headers: agency.headers, payload: { name: 'Запасной' } })
    const spareKey = spare.json<CreatedApiKey>().key
    const published = [await publish(agency), await publish(agency)]
    const withdrawn = await publish(agency)
    const moved = await t.app.inject({ method: 'POST', url: `/properties/${withdrawn}/status`, headers: agency.headers, payload: { status_id: 4 } })
    assert.equal(moved.statusCode, 200, moved.body)
    const othersListing = await publish(other)

    const ownViews = async () => Promise.all([...published, withdrawn].map((id) => get<Property>(`/properties/${id}`, agency.headers)))
    const ownBefore = await ownViews()
    const ownListBefore = await get<PropertyPage>('/properties', agency.headers)
    const catalogueBefore = await catalogueOf(agency)
    const detailBefore = await get<CatalogueDetail>(`/mls/properties/${published[0]}`)
    const totalBefore = (await get<CataloguePage>('/mls/properties')).total
    assert.equal(catalogueBefore.total, 2)

    const suspended = await adminView(await suspend(agency.tenantId))
    assert.equal(suspended.tenant_id, agency.tenantId)
    assert.match(suspended.suspended_at ?? '', /\+00:00$/)

    // Every key of the agency is refused exactly as an unknown key is.
    for (const key of [agency.apiKey, spareKey]) {
      const refused = await me(key)
      assert.equal(refused.statusCode, 401)
      assert.equal(refused.body, INVALID_KEY)
      assert.equal((await t.app.inject({ url: '/properties', headers: { 'x-api-key': key } })).body, INVALID_KEY)
    }
    // Its listings are out of the catalogue, lists, totals and details alike; others' stay.
    assert.deepEqual(await catalogueOf(agency), { items: [], total: 0, limit: 50, offset: 0, next_cursor: null })
    assert.equal((await get<CataloguePage>('/mls/properties')).total, totalBefore - 2)
    const hidden = await t.app.inject(`/mls/properties/${published[0]}`)
    assert.equal(hidden.statusCode, 404)
    assert.deepEqual(hidden.json<ErrorBody>(), { detail: 'Property not found' })
    assert.equal((await t.app.inject(`/mls/properties/${othersListing}`)).statusCode, 200)
    assert.equal((await me(other.apiKey)).statusCode, 200)

    // Suspending again changes nothing.
    assert.deepEqual(await adminView(await suspend(agency.tenantId)), suspended)
    assert.deepEqual(await get<AdminTenant>(`/admin/tenants/${agency.tenantId}`, adminHeaders), suspended)

    const unsuspended = await adminView(await unsuspend(agency.tenantId))
    assert.deepEqual(unsuspended, { ...suspended, suspended_at: null })
    assert.equal((await me(agency.apiKey)).statusCode, 200)
    assert.equal((await me(spareKey)).statusCode, 200)
    // The agency's own view, the catalogue's lists and details: exactly as before.
    assert.deepEqual(await ownViews(), ownBefore)
    assert.deepEqual(await get<PropertyPage>('/properties', agency.headers), ownListBefore)
    assert.deepEqual(await catalogueOf(agency), catalogueBefore)
    assert.deepEqual(await get<CatalogueDetail>(`/mls/properties/${published[0]}`), detailBefore)
    assert.equal((await get<CataloguePage>('/mls/properties')).total, totalBefore)
    // Back without a second announcement.
    const [announced] = await queryRows<{ events: number }>(
      t.db,
      sql`select count(*)::int as events from events where type = 'mls.new_listing' and (data ->> 'id')::int = ${published[0]}::int`,
    )
    assert.equal(announced!.events, 1)

    assert.deepEqual(await adminView(await unsuspend(agency.tenantId)), unsuspended, 'unsuspending again changes nothing')
  })

  it(
    'runs a suspension again that PostgreSQL rolled back to break a deadlock, and answers it done',
    { skip: engine !== 'postgres' && 'PGlite runs one transaction at a time' },
    async () => {
      const agency = await createTenant(t.app)
      const inMoscow = await publish(agency)
      const { id: inPiter } = await submitProperty(t.app, agency, { location: { city_id: 2, address: 'Санкт-Петербург, Невский пр., д. 1' } })
      await runInternalCheck(t.app)
      // Another transaction, as a batch of the internal check publishing in Saint Petersburg and
      // then in Moscow: it holds Saint Petersburg's counter, which the suspension takes after
      // Moscow's (catalogue_versions_bump, city order), then asks for Moscow's. It waits longer
      // before looking for a deadlock, so the suspension is the one PostgreSQL rolls back.
      const other = new pg.Client({ connectionString: t.database.url })
      await other.connect()
      try {
        await other.query('begin')
        await other.query(`set local deadlock_timeout = '60s'`)
        await other.query('update catalogue_versions set version = version + 1 where city_id = 2')
        const suspension = suspend(agency.tenantId)
        await waitFor(
          async () =>
            (await other.query(`select 1 from pg_stat_activity where datname = current_database() and pg_backend_pid() = any(pg_blocking_pids(pid))`))
              .rowCount! > 0,
          30_000,
          'the suspension to wait for the other transaction',
        )
        await other.query('update catalogue_versions set version = version + 1 where city_id = 1')
        await other.query('rollback')
        await adminView(await suspension)
      } finally {
        await other.end()
      }
      for (const id of [inMoscow, inPiter]) {
        assert.equal((await t.app.inject(`/mls/properties/${id}`)).statusCode, 404, `listing ${id} is out of the catalogue`)
        const [held] = await queryRows<{ status: number }>(t.db, sql`select status_id as status from properties where id = ${id}`)
        assert.equal(held!.status, 4)
      }
      await adminView(await unsuspend(agency.tenantId))
    },
  )

  it('keeps its listings waiting for the check, and operators from deciding on them, until it is unsuspended', async () => {
    const agency = await createTenant(t.app)
    const { id } = await submitProperty(t.app, agency)
    await adminView(await suspend(agency.tenantId))

    await runInternalCheck(t.app)
    const waiting = await get<ListingUnderReviewPage>('/admin/properties?status_id=1&limit=100', adminHeaders)
    assert.equal(waiting.items.find((item) => item.id === id)?.waiting_for_check, true)
    const approved = await t.app.inject({ method: 'POST', url: `/admin/properties/${id}/approve`, headers: adminHeaders })
    assert.equal(approved.statusCode, 409)
    assert.deepEqual(approved.json<ErrorBody>(), {
      detail: 'The listing’s agency is suspended; its listings cannot be published until it is unsuspended.',
    })
    // A rejection would not reach it either: it is sent no event while suspended.
    const rejected = await t.app.inject({ method: 'POST', url: `/admin/properties/${id}/reject`, headers: adminHeaders, payload: { reason: 'Spam' } })
    assert.equal(rejected.statusCode, 409)
    assert.deepEqual(rejected.json<ErrorBody>(), {
      detail: 'The listing’s agency is suspended; its listings cannot be rejected until it is unsuspended.',
    })
    assert.equal((await catalogueOf(agency)).total, 0)

    await adminView(await unsuspend(agency.tenantId))
    await runInternalCheck(t.app)
    assert.equal((await get<Property>(`/properties/${id}`, agency.headers)).status_id, 2)
    assert.deepEqual(
      (await catalogueOf(agency)).items.map((item) => item.id),
      [id],
    )
  })

  it('delivers nothing to it: pending deliveries are given up, events meanwhile never sent, later ones are', async () => {
    const agency = await createTenant(t.app)
    const publisher = await createTenant(t.app)
    const answering = await startReceiver()
    const failing = await startReceiver(() => ({ status: 500 }))
    receivers.push(answering, failing)
    await subscribe(t.app, agency, { url: answering.url, events: ['mls.new_listing'] })
    const failingSubscription = await subscribe(t.app, agency, { url: failing.url, events: ['mls.new_listing'] })
    const about = (receiver: Receiver, id: number) =>
      distinctMessages(receiver.requests).filter((request) => (JSON.parse(request.body) as WebhookMessage).data.id === id)

    const before = await publish(publisher)
    await waitFor(() => about(answering, before).length === 1 && about(failing, before).length === 1, 30_000, 'the deliveries before the suspension')
    // The failed one waits an hour for its retry.
    await waitFor(
      async () => (await deliveryLog(t.app, agency, failingSubscription.id)).items[0]?.next_attempt_at != null,
      30_000,
      'the failure in the log, with its retry due',
    )

    // Events of earlier tests fanned out after these subscriptions were made may have arrived too.
    const receivedBefore = distinctMessages(failing.requests).length
    await adminView(await suspend(agency.tenantId))
    const during = await publish(publisher)
    // Nothing is left to send, the retry given up included: what the agency did not get, it never will.
    await waitForOutboxDrained(t.db)
    assert.equal(about(answering, during).length, 0)
    // At least once: a repeat of a delivery (same webhook-id) is allowed, a new one is not.
    assert.equal(distinctMessages(failing.requests).length, receivedBefore)
    assert.equal(about(failing, during).length, 0)

    await adminView(await unsuspend(agency.tenantId))
    const afterwards = await publish(publisher)
    await waitFor(() => about(answering, afterwards).length === 1, 30_000, 'the delivery after the suspension')
    assert.equal(about(answering, during).length, 0)
    // Given up: the failed attempt before the suspension (the oldest entry) no longer names a next one.
    const given = (await deliveryLog(t.app, agency, failingSubscription.id)).items.at(-1)
    assert.equal(given?.status, 'failed')
    assert.equal(given?.next_attempt_at, null)
  })

  it('answers 404 for an unknown agency, or an id no agency can have, and 422 for an id that is not one', async () => {
    for (const response of [
      await suspend(2_000_000_000),
      await unsuspend(2_000_000_000),
      await unsuspend(0),
      await t.app.inject({ url: '/admin/tenants/2000000000', headers: adminHeaders }),
    ]) {
      assert.equal(response.statusCode, 404)
      assert.deepEqual(response.json<ErrorBody>(), { detail: 'Tenant not found' })
    }
    for (const response of [await suspend('first'), await t.app.inject({ url: '/admin/tenants/1.5', headers: adminHeaders })]) {
      assert.equal(response.statusCode, 422, response.body)
    }
  })

  for (const [what, headers] of [
    ['no admin key', {}],
    ['a wrong admin key', { 'x-admin-key': 'wrong-key-wrong-key-wrong' }],
  ] as const) {
    it(`answers 401 to ${what}, changing nothing`, async () => {
      const agency = await createTenant(t.app)
      const responses = [
        await suspend(agency.tenantId, headers),
        await unsuspend(agency.tenantId, headers),
        await t.app.inject({ url: `/admin/tenants/${agency.tenantId}`, headers }),
      ]
      for (const response of responses) {
        assert.equal(response.statusCode, 401)
        assert.deepEqual(response.json<ErrorBody>(), { detail: 'Invalid or missing admin key' })
      }
      assert.equal((await me(agency.apiKey)).statusCode, 200)
    })
  }
})

const MLS_EVENTS: SubscribableEvent[] = ['mls.new_listing', 'mls.listing_updated', 'mls.listing_removed']

/**
 * docs/api.md#suspension: "events raised while it is suspended are not delivered to it, ever:
 * they are dropped for it, not held", and once the suspension is lifted "its subscriptions
 * receive events raised from then on". Whether the worker was running meanwhile must not change
 * what the agency receives: the outbox exists so that a worker that is down or behind delivers
 * later what it would have delivered at once, and nothing else.
 */
describe('an agency suspended while events wait in the outbox for fan-out', () => {
  let t: TestApp
  let worker: RunningWorker | undefined
  let publisher: Tenant
  const receivers: Receiver[] = []

  before(async () => {
    // No worker until a test starts one: the outbox holds the events, as while the worker process is down or behind.
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms', WEBHOOK_TIMEOUT_MS: '5000' })
    publisher = await createTenant(t.app)
  })
  afterEach(async () => {
    await worker?.stop()
    worker = undefined
  })
  after(async () => {
    await t.close()
    await Promise.all(receivers.map((receiver) => receiver.close()))
  })

  /** An agency with an unfiltered and a filtered subscription to every mls.* event, each to a receiver of its own. */
  async function subscribedAgency() {
    const agency = await createTenant(t.app)
    const hooks = [await startReceiver(), await startReceiver()]
    receivers.push(...hooks)
    await subscribe(t.app, agency, { url: hooks[0]!.url, events: MLS_EVENTS })
    await subscribe(t.app, agency, { url: hooks[1]!.url, events: MLS_EVENTS, filter: { city_id: 1 } })
    return { agency, hooks }
  }

  async function suspension(agency: Tenant, action: 'suspend' | 'unsuspend') {
    const response = await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/${action}`, headers: adminHeaders })
    assert.equal(response.statusCode, 200, response.body)
  }

  /** Publishes a listing of another agency through the real flow (submission, internal check): an mls.new_listing in the outbox. */
  async function publish(): Promise<number> {
    const { id } = await submitProperty(t.app, publisher)
    await runInternalCheck(t.app)
    return id
  }

  /** Starts the webhook worker (stopped after each test) and waits until the outbox is drained. */
  async function deliverEverything() {
    worker = startWebhookWorker(t.database.handle, t.config)
    await waitForOutboxDrained(t.db)
  }

  const announcedListings = (hook: Receiver) =>
    distinctMessages(hook.delivered())
      .map((request) => JSON.parse(request.body) as WebhookMessage)
      .filter((message) => message.type === 'mls.new_listing')
      .map((message) => message.data.id)

  it('never delivers an event raised while the agency was suspended, even when fan-out runs after it is unsuspended', async () => {
    const { agency, hooks } = await subscribedAgency()
    await suspension(agency, 'suspend')
    const during = await publish()
    await suspension(agency, 'unsuspend')
    const afterwards = await publish()

    await deliverEverything()
    // Both the unfiltered and the filtered subscription: only the listing announced after the suspension was lifted.
    assert.deepEqual(
      hooks.map(announcedListings),
      [[afterwards], [afterwards]],
      `listing ${during} was announced while the agency was suspended, listing ${afterwards} after the suspension was lifted`,
    )
  })
})
