import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { asc, eq, sql } from 'drizzle-orm'
import pg from 'pg'
import { events, properties, propertyRevisions } from '../../src/db/schema.js'
import type { ChangesPage } from '../../src/modules/catalogue/catalogue-changes.schemas.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import type { PropertyImage } from '../../src/modules/images/images.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { engine } from '../helpers/database.js'
import { waitFor } from '../helpers/webhooks.js'
import { adminHeaders, createTenant, propertyBody, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import { photo, upload } from '../helpers/photos.js'

/**
 * How edits of published listings (revisions), the internal check, status moves, deletion,
 * photos and suspension meet: each test states what docs/api.md promises. The two photo races
 * need PostgreSQL (another transaction holds a change at its commit), and are skipped on PGlite.
 */
/**
 * Another connection holding the change feed's commit-order lock: a change that reaches its
 * commit waits there until `release`. `waitForBlocked(n)` waits until n backends of the test's
 * database are blocked.
 */
async function holdCommits(url: string | undefined) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('begin')
  await client.query(`select pg_advisory_xact_lock(hashtextextended('mls.catalogue_changes', 0))`)
  const blocked = `select 1 from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and cardinality(pg_blocking_pids(pid)) > 0`
  return {
    waitForBlocked: (count: number, what: string) => waitFor(async () => (await client.query(blocked)).rowCount! >= count, 30_000, what),
    release: () => client.query('rollback'),
    end: () => client.end(),
  }
}

function helpers(get: () => TestApp) {
  const call = (tenant: Tenant, method: 'GET' | 'PATCH' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: object) =>
    get().app.inject({ method, url, headers: tenant.headers, ...(payload ? { payload } : {}) })
  const view = async (tenant: Tenant, id: number) => {
    const response = await call(tenant, 'GET', `/properties/${id}`)
    assert.equal(response.statusCode, 200, response.body)
    return response.json<Property>()
  }
  const admin = (action: 'approve' | 'reject', id: number, reason?: string) =>
    get().app.inject({
      method: 'POST',
      url: `/admin/properties/${id}/${action}`,
      headers: adminHeaders,
      ...(reason === undefined ? {} : { payload: { reason } }),
    })
  const suspend = (tenant: Tenant) => get().app.inject({ method: 'POST', url: `/admin/tenants/${tenant.tenantId}/suspend`, headers: adminHeaders })
  const unsuspend = (tenant: Tenant) => get().app.inject({ method: 'POST', url: `/admin/tenants/${tenant.tenantId}/unsuspend`, headers: adminHeaders })
  const catalogueDetail = async (id: number) => {
    const response = await get().app.inject(`/mls/properties/${id}`)
    return { status: response.statusCode, body: response.statusCode === 200 ? response.json<Record<string, unknown>>() : undefined }
  }
  const feedEntry = async (id: number) => {
    let after: string | null = null
    let found: ChangesPage['items'][number] | undefined
    for (;;) {
      const response: Awaited<ReturnType<TestApp['app']['inject']>> = await get().app.inject(`/mls/changes?limit=1000${after ? `&after=${after}` : ''}`)
      assert.equal(response.statusCode, 200, response.body)
      const page = response.json<ChangesPage>()
      for (const item of page.items) if (item.id === id) found = item
      after = page.next_cursor
      if (!page.has_more) return found
    }
  }
  const eventsAbout = async (id: number) =>
    get()
      .db.select({ id: events.id, type: events.type, data: events.data })
      .from(events)
      .where(sql`((${events.data} ->> 'id')::int = ${id} and ${events.type} like 'mls.%') or (${events.data} ->> 'property_id')::int = ${id}`)
      .orderBy(asc(events.id))
  const revisionRow = async (id: number) => (await get().db.select().from(propertyRevisions).where(eq(propertyRevisions.propertyId, id)))[0]
  const row = async (id: number) => (await get().db.select().from(properties).where(eq(properties.id, id)))[0]
  return { call, view, admin, suspend, unsuspend, catalogueDetail, feedEntry, eventsAbout, revisionRow, row }
}

describe('revisions at their edges (MODERATION_MODE=auto)', () => {
  let t: TestApp
  let agency: Tenant
  const h = helpers(() => t)
  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app, { email: 'rev-edges-auto@agency.example' })
  })
  after(() => t.close())

  const publish = async (overrides = {}) => {
    const { id } = await submitProperty(t.app, agency, overrides)
    await runInternalCheck(t.app)
    assert.equal((await h.view(agency, id)).status_id, 2)
    return id
  }
  const patch = async (id: number, payload: object, tenant: Tenant = agency) => {
    const response = await h.call(tenant, 'PATCH', `/properties/${id}`, payload)
    assert.equal(response.statusCode, 200, response.body)
    return response.json<Property>()
  }

  it('keeps a held listing’s revision when a DELETE /properties/{id}/revision let in before the suspension reaches it (409, nothing changed)', async () => {
    const id = await publish()
    const edited = await patch(id, { price: 7_000_000 })
    assert.equal(edited.revision?.status, 'pending_review')
    const waitingSince = (await h.row(id))!.reviewRequestedAt
    assert.notEqual(waitingSince, null)
    assert.equal((await h.suspend(agency)).statusCode, 200)
    // The request passed authentication just before the suspension committed, so it reaches the
    // service (this is all the route's handler does).
    const outcome = await t.app.services.properties.discardRevision(agency.tenantId, id).then(
      () => 'discarded',
      (error: { statusCode?: number }) => error.statusCode,
    )
    const revisionAfter = await h.revisionRow(id)
    assert.equal((await h.unsuspend(agency)).statusCode, 200)
    assert.equal(outcome, 409, 'docs/api.md#suspension: a request reaching a held listing answers 409 and changes nothing')
    assert.ok(revisionAfter, 'the agency’s pending change must still be there')
    assert.deepEqual((await h.row(id))!.reviewRequestedAt, waitingSince)
  })

  it('adds, reorders and removes photos of a listing with a pending revision: shown at once, the feed’s upsert equal to the catalogue, the revision untouched', async () => {
    const id = await publish()
    await patch(id, { price: 6_100_000 })
    const added = await upload(t.app, agency, { file: await photo('jpeg'), fields: { property_id: String(id), sort_order: '5' } })
    assert.equal(added.statusCode, 201, added.body)
    const image = added.json<PropertyImage>()
    const second = await upload(t.app, agency, { file: await photo('png'), fields: { property_id: String(id), sort_order: '9' } })
    assert.equal(second.statusCode, 201, second.body)
    let shown = await h.catalogueDetail(id)
    assert.equal(shown.status, 200)
    assert.equal((shown.body!['images'] as string[]).length, 2)
    assert.equal(shown.body!['price'], 8_500_000, 'the approved price stays in the catalogue')
    assert.deepEqual((await h.feedEntry(id))?.property, shown.body)
    const moved = await h.call(agency, 'PUT', `/property-images/${image.id}`, { sort_order: 20 })
    assert.equal(moved.statusCode, 200, moved.body)
    shown = await h.catalogueDetail(id)
    assert.deepEqual((await h.feedEntry(id))?.property, shown.body)
    const mine = await h.view(agency, id)
    assert.deepEqual([mine.price, mine.revision?.status, mine.images.length], [6_100_000, 'pending_review', 2])
    assert.equal((await h.call(agency, 'DELETE', `/property-images/${image.id}`)).statusCode, 204)
    shown = await h.catalogueDetail(id)
    assert.equal((shown.body!['images'] as string[]).length, 1)
    assert.deepEqual((await h.feedEntry(id))?.property, shown.body)
    await runInternalCheck(t.app)
    shown = await h.catalogueDetail(id)
    assert.equal(shown.body!['price'], 6_100_000)
    assert.deepEqual((await h.feedEntry(id))?.property, shown.body)
    assert.equal((await h.view(agency, id)).revision, null)
  })

  it('refuses an operator’s approval of a revision once the listing was withdrawn; the withdrawn listing holds the revision’s fields', async () => {
    const id = await publish()
    await patch(id, { price: 5_500_000 })
    assert.equal((await h.call(agency, 'POST', `/properties/${id}/status`, { status_id: 4 })).statusCode, 200)
    const approved = await h.admin('approve', id)
    assert.equal(approved.statusCode, 409, approved.body)
    assert.equal((await h.catalogueDetail(id)).status, 404)
    const mine = await h.view(agency, id)
    assert.deepEqual([mine.status_id, mine.price, mine.revision], [4, 5_500_000, null])
    assert.equal((await h.feedEntry(id))?.op, 'remove')
    // Resubmitted and checked: published again, as the revision made it.
    assert.equal((await h.call(agency, 'POST', `/properties/${id}/status`, { status_id: 1 })).statusCode, 200)
    await runInternalCheck(t.app)
    assert.equal((await h.catalogueDetail(id)).body!['price'], 5_500_000)
    assert.deepEqual((await h.feedEntry(id))?.property, (await h.catalogueDetail(id)).body)
  })

  it('drops a rejected revision when a PATCH brings the fields back, with nothing announced and nothing queued for the check', async () => {
    const id = await publish()
    await patch(id, { description: 'Звоните 8 912 345 67 89' })
    await runInternalCheck(t.app)
    assert.equal((await h.view(agency, id)).revision?.status, 'rejected')
    const feedBefore = await h.feedEntry(id)
    const eventsBefore = (await h.eventsAbout(id)).length
    const back = await patch(id, { description: 'Светлая двухкомнатная квартира с видом на парк.' })
    assert.equal(back.revision, null)
    assert.equal((await h.row(id))!.reviewRequestedAt, null)
    assert.equal(await h.revisionRow(id), undefined)
    assert.deepEqual(await h.feedEntry(id), feedBefore)
    assert.equal((await h.eventsAbout(id)).length, eventsBefore)
  })

  it('PUT by external id on a listing with a revision: the same body again changes nothing; the approved body drops the revision', async () => {
    const externalId = 'REV-PUT-1'
    const body = propertyBody()
    const created = await h.call(agency, 'PUT', `/properties/by-external-id/${externalId}`, body)
    assert.equal(created.statusCode, 201, created.body)
    const { id } = created.json<Property>()
    await runInternalCheck(t.app)
    const revised = { ...body, price: 7_700_000 }
    const first = await h.call(agency, 'PUT', `/properties/by-external-id/${externalId}`, revised)
    assert.equal(first.statusCode, 200, first.body)
    assert.equal(first.json<Property>().revision?.status, 'pending_review')
    const before = await h.view(agency, id)
    const again = await h.call(agency, 'PUT', `/properties/by-external-id/${externalId}`, revised)
    assert.equal(again.statusCode, 200, again.body)
    const after = await h.view(agency, id)
    assert.deepEqual(after, before, 'the same PUT again stores nothing')
    const back = await h.call(agency, 'PUT', `/properties/by-external-id/${externalId}`, body)
    assert.equal(back.statusCode, 200, back.body)
    assert.equal(back.json<Property>().revision, null)
    assert.equal(await h.revisionRow(id), undefined)
    assert.equal((await h.catalogueDetail(id)).body!['price'], 8_500_000)
  })

  it('deletes a listing with a revision: one remove “deleted” in the feed and one mls.listing_removed, the revision gone', async () => {
    const id = await publish()
    await patch(id, { price: 4_400_000 })
    assert.equal((await h.call(agency, 'DELETE', `/properties/${id}`)).statusCode, 204)
    assert.equal(await h.revisionRow(id), undefined)
    assert.deepEqual((await h.feedEntry(id))?.property, { id, reason: 'deleted' })
    const removed = (await h.eventsAbout(id)).filter((event) => event.type === 'mls.listing_removed')
    assert.deepEqual(
      removed.map((event) => event.data),
      [{ id, reason: 'deleted' }],
    )
    await runInternalCheck(t.app)
  })

  it('brings back a suspended agency’s listing with its pending revision: the approved version first, then the check approves the revision once', async () => {
    const other = await createTenant(t.app, { email: 'rev-edges-suspended@agency.example' })
    const { id } = await submitProperty(t.app, other)
    await runInternalCheck(t.app)
    await patch(id, { price: 3_300_000 }, other)
    assert.equal((await h.suspend(other)).statusCode, 200)
    await runInternalCheck(t.app)
    assert.equal((await h.catalogueDetail(id)).status, 404)
    assert.equal((await h.feedEntry(id))?.op, 'remove')
    assert.equal((await h.unsuspend(other)).statusCode, 200)
    const back = await h.catalogueDetail(id)
    assert.equal(back.body!['price'], 8_500_000)
    assert.deepEqual((await h.feedEntry(id))?.property, back.body)
    const mine = await h.view(other, id)
    assert.deepEqual([mine.status_id, mine.price, mine.revision?.status], [2, 3_300_000, 'pending_review'])
    await runInternalCheck(t.app)
    const approved = await h.catalogueDetail(id)
    assert.equal(approved.body!['price'], 3_300_000)
    assert.deepEqual((await h.feedEntry(id))?.property, approved.body)
    const types = (await h.eventsAbout(id)).map((event) => event.type)
    assert.deepEqual(types, [
      'mls.new_listing',
      'property.published',
      'mls.listing_removed',
      'mls.listing_updated',
      'mls.listing_updated',
      'property.published',
    ])
  })

  it('keeps a rejected revision rejected across a suspension, and the agency can discard it afterwards', async () => {
    const other = await createTenant(t.app, { email: 'rev-edges-suspended-2@agency.example' })
    const { id } = await submitProperty(t.app, other)
    await runInternalCheck(t.app)
    await patch(id, { price: 0 }, other)
    await runInternalCheck(t.app)
    const rejected = await h.view(other, id)
    assert.equal(rejected.revision?.status, 'rejected')
    assert.equal((await h.suspend(other)).statusCode, 200)
    assert.equal((await h.unsuspend(other)).statusCode, 200)
    await runInternalCheck(t.app)
    const after = await h.view(other, id)
    assert.deepEqual(after, rejected)
    const discarded = await h.call(other, 'DELETE', `/properties/${id}/revision`)
    assert.equal(discarded.statusCode, 204, discarded.body)
    const back = await h.view(other, id)
    assert.deepEqual([back.price, back.revision], [8_500_000, null])
  })

  it('a PATCH retry of the same revision does not requeue or re-date it', async () => {
    const id = await publish()
    const first = await patch(id, { price: 2_200_000 })
    const again = await patch(id, { price: 2_200_000 })
    assert.deepEqual(again.revision, first.revision)
    assert.deepEqual(again.updated_at, first.updated_at)
  })

  it('renames the owner of a listing with a pending revision at once, moving updated_at and leaving the revision as it was', async () => {
    // docs/api.md#revisions: changes of the owner's name and notes apply at once.
    const id = await publish()
    const revised = await patch(id, { price: 2_300_000 })
    // Stored to the microsecond: the answers' milliseconds may not tell two quick requests apart.
    const updatedAt = async () =>
      (
        await t.db
          .select({ at: sql<string>`${properties.updatedAt}::text` })
          .from(properties)
          .where(eq(properties.id, id))
      )[0]!.at
    const before = await updatedAt()
    const renamed = await patch(id, { owner: { name: 'Новое имя владельца', phone: revised.owner!.phone } })
    assert.equal(renamed.owner?.name, 'Новое имя владельца')
    assert.deepEqual(renamed.revision, revised.revision)
    const [{ moved }] = (await t.db
      .select({ moved: sql<boolean>`${properties.updatedAt} > ${before}::timestamptz` })
      .from(properties)
      .where(eq(properties.id, id))) as [{ moved: boolean }]
    assert.ok(moved, `updated_at ${before} → ${await updatedAt()}`)
  })

  it('close with a pending revision: out of the catalogue as closed; the revision is the closed listing’s fields', async () => {
    const id = await publish()
    await patch(id, { price: 1_100_000 })
    assert.equal((await h.call(agency, 'POST', `/properties/${id}/status`, { status_id: 5 })).statusCode, 200)
    await runInternalCheck(t.app)
    const mine = await h.view(agency, id)
    assert.deepEqual([mine.status_id, mine.price, mine.revision], [5, 1_100_000, null])
    assert.deepEqual((await h.feedEntry(id))?.property, { id, reason: 'closed' })
    assert.equal(await h.revisionRow(id), undefined)
  })

  it('refuses with a 409 the deletion of a listing its agency’s suspension holds, and keeps it as it was', async () => {
    const other = await createTenant(t.app, { email: 'rev-edges-held-delete@agency.example' })
    const { id } = await submitProperty(t.app, other)
    await runInternalCheck(t.app)
    await patch(id, { price: 3_900_000 }, other)
    assert.equal((await h.suspend(other)).statusCode, 200)
    assert.deepEqual((await h.feedEntry(id))?.property, { id, reason: 'suspended' })
    // A DELETE that passed authentication just before the suspension committed.
    const outcome = await t.app.services.properties.remove(other.tenantId, id).then(
      () => 204,
      (error: { statusCode?: number }) => error.statusCode,
    )
    assert.equal(outcome, 409, 'a deletion would leave the feed announcing a listing “suspended”, to come back, for good')
    assert.equal((await h.unsuspend(other)).statusCode, 200)
    assert.deepEqual([(await h.view(other, id)).status_id, (await h.view(other, id)).revision?.status], [2, 'pending_review'])
    assert.equal((await h.feedEntry(id))?.op, 'upsert')
  })

  it('approving a revision that moves the listing to another city moves it in the catalogue lists and totals', async () => {
    const id = await publish()
    const inCity = async (city: number) => {
      const response = await t.app.inject(`/mls/properties?city_id=${city}&limit=100`)
      assert.equal(response.statusCode, 200, response.body)
      const page = response.json<{ items: { id: number }[]; total: number }>()
      return { has: page.items.some((item) => item.id === id), total: page.total }
    }
    const before1 = await inCity(1)
    const before2 = await inCity(2)
    assert.equal(before1.has, true)
    await patch(id, { location: { city_id: 2, address: 'Санкт-Петербург, Невский пр., д. 99' } })
    assert.deepEqual(await inCity(1), before1, 'the approved version stays in its city until the check passes the revision')
    await runInternalCheck(t.app)
    const after1 = await inCity(1)
    const after2 = await inCity(2)
    assert.deepEqual([after1.has, after1.total, after2.has, after2.total], [false, before1.total - 1, true, before2.total + 1])
    assert.deepEqual((await h.feedEntry(id))?.property, (await h.catalogueDetail(id)).body)
  })

  it('GET /properties shows a revision that clears price, area and location as cleared, like GET /properties/{id}', async () => {
    const id = await publish()
    await patch(id, { price: null, location: null, attributes: { area: null, rooms: null } })
    const mine = await h.view(agency, id)
    const response = await h.call(agency, 'GET', `/properties?limit=100`)
    assert.equal(response.statusCode, 200, response.body)
    const item = response.json<{ items: Record<string, unknown>[] }>().items.find((entry) => entry['id'] === id)!
    assert.deepEqual([item['price'], item['area'], item['rooms'], item['city'], item['district']], [mine.price, null, null, null, null])
  })

  it(
    'a photo removed while the listing is being withdrawn: the feed ends with the withdrawal, not an upsert of a listing the catalogue no longer has',
    { skip: engine !== 'postgres' && 'needs two transactions at once' },
    async () => {
      const id = await publish()
      const added = await upload(t.app, agency, { file: await photo('jpeg'), fields: { property_id: String(id) } })
      assert.equal(added.statusCode, 201, added.body)
      const image = added.json<PropertyImage>()
      await patch(id, { price: 6_600_000 }) // with a pending revision
      // Hold the feed's commit-order lock, so the withdrawal has written everything and waits to commit.
      const commits = await holdCommits(t.database.url)
      try {
        const withdrawal = h.call(agency, 'POST', `/properties/${id}/status`, { status_id: 4 })
        await commits.waitForBlocked(1, 'the withdrawal to wait at its commit')
        const removal = h.call(agency, 'DELETE', `/property-images/${image.id}`)
        await commits.waitForBlocked(2, 'the photo removal to wait for the withdrawal')
        await commits.release()
        assert.equal((await withdrawal).statusCode, 200)
        assert.equal((await removal).statusCode, 204)
      } finally {
        await commits.end()
      }
      assert.equal((await h.catalogueDetail(id)).status, 404)
      const entry = await h.feedEntry(id)
      assert.deepEqual([entry?.op, entry?.property], ['remove', { id, reason: 'withdrawn' }])
    },
  )

  it(
    'a photo removed while the check publishes the listing: mls.new_listing is not left showing a photo the catalogue no longer has',
    { skip: engine !== 'postgres' && 'needs two transactions at once' },
    async () => {
      const { id } = await submitProperty(t.app, agency)
      const added = await upload(t.app, agency, { file: await photo('jpeg'), fields: { property_id: String(id) } })
      assert.equal(added.statusCode, 201, added.body)
      const image = added.json<PropertyImage>()
      const commits = await holdCommits(t.database.url)
      try {
        const check = runInternalCheck(t.app)
        await commits.waitForBlocked(1, 'the publication to wait at its commit')
        // The agency removes the photo meanwhile: it waits for the publication to commit.
        const removal = h.call(agency, 'DELETE', `/property-images/${image.id}`)
        await commits.waitForBlocked(2, 'the photo removal to wait for the publication')
        await commits.release()
        await check
        assert.equal((await removal).statusCode, 204)
      } finally {
        await commits.end()
      }
      const shown = await h.catalogueDetail(id)
      assert.equal(shown.status, 200)
      assert.deepEqual(shown.body!['images'], [])
      // The last mls.* event about the listing is what subscribers keep: it must match the catalogue.
      const last = (await h.eventsAbout(id)).filter((event) => event.type.startsWith('mls.')).at(-1)
      assert.equal((last?.data as { thumbnail_url: string | null }).thumbnail_url, null, `last event ${last?.type} still shows the removed photo`)
    },
  )

  it('refuses with a 409 a PATCH of a held listing with a revision back to its approved version, and keeps the revision', async () => {
    const id = await publish()
    await patch(id, { price: 2_900_000 })
    await t.db.execute(sql`update properties set status_id = 4, held_status_id = 2 where id = ${id}::int`)
    const response = await h.call(agency, 'PATCH', `/properties/${id}`, { price: 8_500_000 })
    const got = await h.view(agency, id)
    await t.db.execute(sql`update properties set status_id = 2, held_status_id = null where id = ${id}::int`)
    // The agency's version is the revision's (2,900,000): going back to 8,500,000 is a change.
    assert.equal(response.statusCode, 409, response.body)
    assert.deepEqual([got.price, got.revision?.status], [2_900_000, 'pending_review'])
  })
})

describe('revisions at their edges (MODERATION_MODE=manual)', () => {
  let t: TestApp
  let agency: Tenant
  const h = helpers(() => t)
  before(async () => {
    t = await buildTestApp({ MODERATION_MODE: 'manual' })
    agency = await createTenant(t.app, { email: 'rev-edges-manual@agency.example' })
  })
  after(() => t.close())

  const publish = async () => {
    const { id } = await submitProperty(t.app, agency)
    assert.equal((await h.admin('approve', id)).statusCode, 200)
    return id
  }
  const patch = async (id: number, payload: object) => {
    const response = await h.call(agency, 'PATCH', `/properties/${id}`, payload)
    assert.equal(response.statusCode, 200, response.body)
    return response.json<Property>()
  }

  it('approves a revision waiting for an operator after its findings were recorded: the catalogue switches once', async () => {
    const id = await publish()
    await patch(id, { price: 9_900_000 })
    await runInternalCheck(t.app)
    const waiting = await h.view(agency, id)
    assert.equal(waiting.revision?.status, 'pending_review')
    assert.notEqual(waiting.revision?.moderation, null)
    assert.equal((await h.admin('approve', id)).statusCode, 200)
    const shown = await h.catalogueDetail(id)
    assert.equal(shown.body!['price'], 9_900_000)
    assert.deepEqual((await h.feedEntry(id))?.property, shown.body)
    assert.equal((await h.admin('approve', id)).statusCode, 409)
  })

  it('refuses an operator’s approval of a revision while the agency is suspended, and keeps the revision', async () => {
    const id = await publish()
    await patch(id, { price: 9_100_000 })
    assert.equal((await h.suspend(agency)).statusCode, 200)
    const approved = await h.admin('approve', id)
    const rejected = await h.admin('reject', id, 'нет')
    assert.equal((await h.unsuspend(agency)).statusCode, 200)
    assert.equal(approved.statusCode, 409, approved.body)
    assert.equal(rejected.statusCode, 409, rejected.body)
    assert.equal((await h.view(agency, id)).revision?.status, 'pending_review')
    assert.equal((await h.catalogueDetail(id)).body!['price'], 8_500_000)
    assert.equal((await h.admin('approve', id)).statusCode, 200)
    assert.equal((await h.catalogueDetail(id)).body!['price'], 9_100_000)
  })

  it('never shows a listing whose revision is being approved in a state it never had: the old price without the revision', async () => {
    const id = await publish()
    let seen = 0
    for (let round = 1; round <= 15; round++) {
      const price = 9_000_000 + round
      await patch(id, { price })
      // Reads while the approval commits: each must show the submitted price, with the revision
      // waiting or, once approved, as the listing's own.
      let approving = true
      const approval = h.admin('approve', id).finally(() => (approving = false))
      const reader = async () => {
        do {
          const shown = await h.view(agency, id)
          seen++
          assert.equal(shown.price, price, `round ${round}: shown ${JSON.stringify({ price: shown.price, revision: shown.revision?.status ?? null })}`)
        } while (approving)
      }
      await Promise.all([approval, reader(), reader(), reader(), reader()])
      assert.equal((await approval).statusCode, 200)
      assert.equal((await h.view(agency, id)).revision, null)
    }
    assert.ok(seen >= 60)
  })

  it('operator rejects a revision, the agency PATCHes a new one, and the operator approves it', async () => {
    const id = await publish()
    await patch(id, { price: 1 })
    assert.equal((await h.admin('reject', id, 'Цена')).statusCode, 200)
    assert.equal((await h.view(agency, id)).revision?.status, 'rejected')
    assert.equal((await h.admin('approve', id)).statusCode, 409)
    await patch(id, { price: 7_000_000 })
    assert.equal((await h.view(agency, id)).revision?.status, 'pending_review')
    assert.equal((await h.admin('approve', id)).statusCode, 200)
    assert.equal((await h.catalogueDetail(id)).body!['price'], 7_000_000)
    const feed = await h.feedEntry(id)
    assert.deepEqual(feed?.property, (await h.catalogueDetail(id)).body)
  })
})
