import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { asc, eq, inArray, sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { catalogueChanges, events } from '../../src/db/schema.js'
import type { ChangesPage } from '../../src/modules/catalogue/catalogue-changes.schemas.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import type { PropertyImage } from '../../src/modules/images/images.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders, createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import { photo, upload } from '../helpers/photos.js'
import type { ErrorBody, ValidationErrorBody } from '../helpers/responses.js'

describe('the change feed, GET /mls/changes', () => {
  let t: TestApp
  let agency: Tenant
  let tenants = 0

  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app, { email: 'changes@agency.example' })
  })
  after(() => t.close())

  const feed = async (query = ''): Promise<ChangesPage> => {
    const response = await t.app.inject(`/mls/changes${query}`)
    assert.equal(response.statusCode, 200, response.body)
    assert.equal(response.headers['cache-control'], 'no-store')
    return response.json<ChangesPage>()
  }
  /** Every change after `cursor`, page by page. */
  const changesAfter = async (cursor?: string) => {
    const items: ChangesPage['items'] = []
    let next = cursor
    for (;;) {
      const page = await feed(`?limit=7${next ? `&after=${next}` : ''}`)
      items.push(...page.items)
      next = page.next_cursor
      if (!page.has_more) return { items, cursor: next }
    }
  }
  const snapshot = async () => (await t.app.inject('/mls/changes/snapshot')).json<{ cursor: string }>().cursor
  const call = (method: 'GET' | 'PATCH' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: object, tenant: Tenant = agency) =>
    t.app.inject({ method, url, headers: tenant.headers, ...(payload ? { payload } : {}) })
  const catalogueDetail = async (id: number) => (await t.app.inject(`/mls/properties/${id}`)).json<unknown>()
  const publish = async (tenant: Tenant = agency, overrides = {}) => {
    const { id } = await submitProperty(t.app, tenant, overrides)
    await runInternalCheck(t.app)
    return id
  }
  /** The outbox's `mls.*` events about a listing, oldest first. */
  const mlsEvents = (id: number) =>
    t.db
      .select({ type: events.type, data: events.data, subject: events.subject })
      .from(events)
      .where(sql`${events.type} like 'mls.%' and (${events.data} ->> 'id')::int = ${id}`)
      .orderBy(asc(events.id))

  it('starts a listing in the feed with its publication, as the catalogue shows it', async () => {
    const cursor = await snapshot()
    const id = await publish()
    const { items } = await changesAfter(cursor)
    assert.deepEqual(
      items.map((item) => [item.op, item.id]),
      [['upsert', id]],
    )
    assert.deepEqual(items[0]!.property, await catalogueDetail(id))
    assert.match(items[0]!.changed_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/)
    assert.deepEqual(
      (await mlsEvents(id)).map((event) => event.type),
      ['mls.new_listing'],
    )
  })

  it('announces nothing, in the feed or the outbox, when an approved revision changes only what the catalogue does not show', async () => {
    const id = await publish()
    const shown = await catalogueDetail(id)
    const cursor = await snapshot()
    const edited = await call('PATCH', `/properties/${id}`, { location: { city_id: 1, district_id: 1, address: 'ул. Тверская, д. 7, подъезд 2' } })
    assert.equal(edited.statusCode, 200, edited.body)
    assert.equal(edited.json<Property>().revision?.status, 'pending_review')
    await runInternalCheck(t.app)
    const after = (await call('GET', `/properties/${id}`)).json<Property>()
    assert.deepEqual([after.revision, after.location?.address], [null, 'ул. Тверская, д. 7, подъезд 2'])
    assert.deepEqual(await catalogueDetail(id), shown)
    assert.deepEqual((await changesAfter(cursor)).items, [])
    assert.deepEqual(
      (await mlsEvents(id)).map((event) => event.type),
      ['mls.new_listing'],
    )
  })

  it('keeps an edited listing online: the change is a revision until the check passes it, then one upsert and one mls.listing_updated', async () => {
    const id = await publish()
    const published = await catalogueDetail(id)
    const cursor = await snapshot()

    const edited = await call('PATCH', `/properties/${id}`, { price: 7_700_000, description: 'Цена снижена.' })
    assert.equal(edited.statusCode, 200, edited.body)
    const view = edited.json<Property>()
    assert.deepEqual([view.status_id, view.price, view.description, view.revision?.status], [2, 7_700_000, 'Цена снижена.', 'pending_review'])
    assert.ok(view.revision?.submitted_at)
    // The catalogue, and so the feed, still show the approved version.
    assert.deepEqual(await catalogueDetail(id), published)
    assert.deepEqual((await changesAfter(cursor)).items, [])

    await runInternalCheck(t.app)
    const updated = (await catalogueDetail(id)) as { price: number; description: string; published_at: string }
    assert.deepEqual([updated.price, updated.description], [7_700_000, 'Цена снижена.'])
    assert.equal(updated.published_at, (published as { published_at: string }).published_at, 'days on market kept')
    const { items } = await changesAfter(cursor)
    assert.deepEqual(
      items.map((item) => [item.op, item.id]),
      [['upsert', id]],
    )
    assert.deepEqual(items[0]!.property, updated)
    assert.equal((await call('GET', `/properties/${id}`)).json<Property>().revision, null)
    const announced = await mlsEvents(id)
    assert.deepEqual(
      announced.map((event) => event.type),
      ['mls.new_listing', 'mls.listing_updated'],
    )
    assert.deepEqual(announced[1]!.data, updated)
    assert.equal(announced[1]!.subject?.before?.price, 8_500_000)
    assert.equal(announced[1]!.subject?.after?.price, 7_700_000)
  })

  it('leaves the approved version online when the check rejects a revision, which the agency may discard', async () => {
    const id = await publish()
    const published = await catalogueDetail(id)
    const cursor = await snapshot()
    const edited = await call('PATCH', `/properties/${id}`, { description: 'Звоните: +7 912 345-67-89' })
    assert.equal(edited.statusCode, 200, edited.body)
    await runInternalCheck(t.app)

    const rejected = (await call('GET', `/properties/${id}`)).json<Property>()
    assert.deepEqual([rejected.status_id, rejected.revision?.status, rejected.description], [2, 'rejected', 'Звоните: +7 912 345-67-89'])
    assert.deepEqual(
      rejected.revision?.moderation?.reasons.map((reason) => reason.code),
      ['contacts_in_description'],
    )
    assert.deepEqual(await catalogueDetail(id), published)
    assert.deepEqual((await changesAfter(cursor)).items, [])
    const [notice] = await t.db
      .select({ data: events.data })
      .from(events)
      .where(sql`${events.type} = 'property.rejected' and (${events.data} ->> 'property_id')::int = ${id}`)
    assert.deepEqual(
      (notice?.data as { status_id: number; revision: boolean; reasons: { code: string }[] }).reasons.map((reason) => reason.code),
      ['contacts_in_description'],
    )
    assert.deepEqual([(notice?.data as { status_id: number }).status_id, (notice?.data as { revision: boolean }).revision], [2, true])

    // Another agency's listing, a missing key, a listing without a revision: 404, 401, 404.
    const other = await createTenant(t.app, { email: `other-${++tenants}@changes.example` })
    assert.equal((await call('DELETE', `/properties/${id}/revision`, undefined, other)).statusCode, 404)
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/properties/${id}/revision` })).statusCode, 401)
    assert.equal((await call('DELETE', `/properties/abc/revision`)).statusCode, 422)

    const discarded = await call('DELETE', `/properties/${id}/revision`)
    assert.equal(discarded.statusCode, 204, discarded.body)
    assert.equal(discarded.body, '')
    const back = (await call('GET', `/properties/${id}`)).json<Property>()
    assert.deepEqual([back.status_id, back.revision, back.description], [2, null, (published as { description: string }).description])
    const again = await call('DELETE', `/properties/${id}/revision`)
    assert.equal(again.statusCode, 404)
    assert.deepEqual(again.json<ErrorBody>(), { detail: 'This listing has no revision to discard.' })
    assert.deepEqual((await changesAfter(cursor)).items, [])
  })

  it('records photos added, reordered and removed on a published listing, and no event for a reorder that shows no change', async () => {
    const id = await publish()
    const cursor = await snapshot()
    const first = (await upload(t.app, agency, { file: await photo('jpeg'), fields: { property_id: String(id) } })).json<PropertyImage>()
    const second = (await upload(t.app, agency, { file: await photo('png'), fields: { property_id: String(id), sort_order: '1' } })).json<PropertyImage>()
    const afterUploads = await changesAfter(cursor)
    assert.deepEqual(
      afterUploads.items.map((item) => [item.op, item.id]),
      [['upsert', id]],
      'one row per listing: its latest change',
    )
    assert.equal((afterUploads.items[0]!.property as { images: string[] }).images.length, 2)

    assert.equal((await call('PUT', `/property-images/${first.id}`, { sort_order: 5 })).statusCode, 200)
    const reordered = await changesAfter(afterUploads.cursor)
    assert.deepEqual((reordered.items[0]!.property as { images: string[] }).images, [second.url, first.url])
    assert.equal((reordered.items[0]!.property as { thumbnail_url: string }).thumbnail_url, second.thumbnail_url)
    // A new sort_order that leaves the order shown as it was: the feed may repeat the state it
    // showed (an upsert is idempotent), but no mls.listing_updated says the listing changed.
    assert.equal((await call('PUT', `/property-images/${first.id}`, { sort_order: 6 })).statusCode, 200)
    const shownAgain = await changesAfter(reordered.cursor)
    for (const item of shownAgain.items) assert.deepEqual(item.property, reordered.items[0]!.property)
    // The sort_order it has already (a sync repeating its PUT) changes nothing: no entry at all.
    const same = await call('PUT', `/property-images/${first.id}`, { sort_order: 6 })
    assert.equal(same.json<PropertyImage>().sort_order, 6, same.body)
    assert.deepEqual((await changesAfter(shownAgain.cursor)).items, [])

    assert.equal((await call('DELETE', `/property-images/${second.id}`)).statusCode, 204)
    const removed = await changesAfter(reordered.cursor)
    assert.deepEqual((removed.items[0]!.property as { images: string[] }).images, [first.url])
    assert.deepEqual(removed.items[0]!.property, await catalogueDetail(id))
    assert.deepEqual(
      (await mlsEvents(id)).map((event) => event.type),
      ['mls.new_listing', 'mls.listing_updated', 'mls.listing_updated', 'mls.listing_updated', 'mls.listing_updated'],
    )
  })

  it('records every way a listing leaves the catalogue, with why, and its return', async () => {
    const owner = await createTenant(t.app, { email: `leaving-${++tenants}@changes.example` })
    const [withdrawn, closed, deleted, suspended] = [await publish(owner), await publish(owner), await publish(owner), await publish(owner)]
    const cursor = await snapshot()
    assert.equal((await call('POST', `/properties/${withdrawn}/status`, { status_id: 4 }, owner)).statusCode, 200)
    assert.equal((await call('POST', `/properties/${closed}/status`, { status_id: 5 }, owner)).statusCode, 200)
    assert.equal((await call('DELETE', `/properties/${deleted}`, undefined, owner)).statusCode, 204)
    assert.equal((await t.app.inject({ method: 'POST', url: `/admin/tenants/${owner.tenantId}/suspend`, headers: adminHeaders })).statusCode, 200)

    const removals = await changesAfter(cursor)
    assert.deepEqual(
      removals.items.map((item) => [item.op, item.id, item.property]),
      [
        ['remove', withdrawn, { id: withdrawn, reason: 'withdrawn' }],
        ['remove', closed, { id: closed, reason: 'closed' }],
        ['remove', deleted, { id: deleted, reason: 'deleted' }],
        ['remove', suspended, { id: suspended, reason: 'suspended' }],
      ],
    )
    for (const [id, reason] of [
      [withdrawn, 'withdrawn'],
      [closed, 'closed'],
      [deleted, 'deleted'],
      [suspended, 'suspended'],
    ] as const) {
      const announced = await mlsEvents(id)
      assert.deepEqual(announced.at(-1)?.type, 'mls.listing_removed')
      assert.deepEqual(announced.at(-1)?.data, { id, reason })
      assert.equal(announced.at(-1)?.subject?.before?.id, id)
    }

    assert.equal((await t.app.inject({ method: 'POST', url: `/admin/tenants/${owner.tenantId}/unsuspend`, headers: adminHeaders })).statusCode, 200)
    const back = await changesAfter(removals.cursor)
    assert.deepEqual(
      back.items.map((item) => [item.op, item.id]),
      [['upsert', suspended]],
    )
    assert.deepEqual(back.items[0]!.property, await catalogueDetail(suspended))
    assert.equal((await mlsEvents(suspended)).at(-1)?.type, 'mls.listing_updated')
  })

  it('pages with next_cursor and has_more, and refuses what is not a cursor or a limit', async () => {
    for (let i = 0; i < 3; i++) await publish()
    const whole = await changesAfter()
    const firstTwo = await feed('?limit=2')
    assert.deepEqual(firstTwo.items, whole.items.slice(0, 2))
    assert.equal(firstTwo.has_more, true)
    const rest = await changesAfter(firstTwo.next_cursor)
    assert.deepEqual([...firstTwo.items, ...rest.items], whole.items)
    // Each item's own cursor reads on from it.
    assert.deepEqual((await changesAfter(firstTwo.items[0]!.cursor)).items, whole.items.slice(1))
    // At the end: nothing new, the same cursor back.
    const end = await feed(`?after=${whole.cursor}`)
    assert.deepEqual([end.items, end.next_cursor, end.has_more], [[], whole.cursor, false])
    assert.equal((await feed()).items.length, 100 < whole.items.length ? 100 : whole.items.length, 'limit defaults to 100')

    for (const query of ['?after=not*base64', '?after=bm9wZQ', '?limit=0', '?limit=1001', '?limit=x']) {
      const response = await t.app.inject(`/mls/changes${query}`)
      assert.equal(response.statusCode, 422, query)
      assert.equal(response.json<ValidationErrorBody>().errors[0]?.loc[0], 'query', query)
    }
  })

  it('refuses a cursor cut short by a character with 422, not the 410 that would send a mirror back to a full copy', async () => {
    const fresh = await buildTestApp()
    try {
      const seller = await createTenant(fresh.app, { email: 'truncated-cursor@agency.example' })
      const ids: number[] = []
      // Eleven listings, so that the cursor below is `c2.12`, whose base64 cut by one character reads as `c2.1`.
      for (let i = 0; i < 11; i++) ids.push((await submitProperty(fresh.app, seller)).id)
      await runInternalCheck(fresh.app)
      assert.equal(
        (await fresh.app.inject({ method: 'POST', url: `/properties/${ids[0]}/status`, headers: seller.headers, payload: { status_id: 4 } })).statusCode,
        200,
      )
      // Past CHANGE_RETENTION_DAYS, and pruned as the retention job does.
      await fresh.db.execute(sql`update catalogue_changes set changed_at = now() - interval '91 days' where listing_id = ${ids[0]}`)
      assert.equal(await fresh.app.services.changes.forgetRemovals(90, 1000), 1)
      const given = (await fresh.app.inject('/mls/changes?limit=1')).json<ChangesPage>().next_cursor
      assert.equal((await fresh.app.inject(`/mls/changes?after=${given}`)).statusCode, 200)
      const truncated = await fresh.app.inject(`/mls/changes?after=${given.slice(0, -1)}`)
      assert.equal(truncated.statusCode, 422, `${given} cut short: ${truncated.body}`)
      assert.deepEqual(truncated.json<ValidationErrorBody>().errors[0]?.loc, ['query', 'after'])
    } finally {
      await fresh.close()
    }
  })

  it('answers 410 for a cursor older than the removals kept, and a mirror starting over misses nothing', async () => {
    const old = await snapshot()
    const id = await publish()
    assert.equal((await call('POST', `/properties/${id}/status`, { status_id: 4 })).statusCode, 200)
    // Past CHANGE_RETENTION_DAYS (90 by default).
    await t.db
      .update(catalogueChanges)
      .set({ changedAt: sql`now() - interval '91 days'` })
      .where(eq(catalogueChanges.listingId, id))
    assert.ok((await t.app.services.changes.forgetRemovals(90, 1000)) >= 1)

    const gone = await t.app.inject(`/mls/changes?after=${old}`)
    assert.equal(gone.statusCode, 410)
    assert.match(gone.json<ErrorBody>().detail, /older than the kept history/)
    assert.equal((await t.app.inject(`/mls/changes?after=${await snapshot()}`)).statusCode, 200)
    const fromStart = await changesAfter()
    assert.ok(!fromStart.items.some((item) => item.id === id))
    // From the start, the feed is the catalogue: every listing it shows, as it shows it.
    const catalogue = await queryRows<{ id: number }>(t.db, sql`select id from properties where status_id = 2 order by id`)
    const upserts = fromStart.items.filter((item) => item.op === 'upsert')
    assert.deepEqual(
      upserts.map((item) => item.id).sort((a, b) => a - b),
      catalogue.map((row) => row.id),
    )
    for (const item of upserts) assert.deepEqual(item.property, await catalogueDetail(item.id))
  })

  it('lets a copy from the start read on past removals forgotten while it reads, of listings it never saw; 410 once one it saw is', async () => {
    const seen = await publish()
    const unseen = await publish()
    assert.equal((await call('POST', `/properties/${unseen}/status`, { status_id: 4 })).statusCode, 200)
    const age = (id: number, days: number) =>
      t.db
        .update(catalogueChanges)
        .set({ changedAt: sql`now() - make_interval(days => ${days}::int)` })
        .where(eq(catalogueChanges.listingId, id))
    await age(unseen, 89)
    // A mirror starts a copy from the start of the feed, one change a page, and reads to `seen`.
    let page = await feed('?limit=1')
    while (page.items[0]!.id !== seen) page = await feed(`?limit=1&after=${page.next_cursor}`)
    // The withdrawal made before it started passes 90 days and is forgotten: the mirror never saw that listing.
    await age(unseen, 91)
    assert.equal(await t.app.services.changes.forgetRemovals(90, 1000), 1)
    const readOn = await t.app.inject(`/mls/changes?limit=1&after=${page.next_cursor}`)
    assert.equal(readOn.statusCode, 200, readOn.body)
    // A listing it did see is withdrawn, and that removal forgotten before the mirror reads it: 410.
    assert.equal((await call('POST', `/properties/${seen}/status`, { status_id: 4 })).statusCode, 200)
    await age(seen, 91)
    assert.equal(await t.app.services.changes.forgetRemovals(90, 1000), 1)
    const gone = await t.app.inject(`/mls/changes?limit=1&after=${page.next_cursor}`)
    assert.equal(gone.statusCode, 410, gone.body)
  })

  it('positions and times changes in commit order: a reader never passes a change that commits after it read, and changed_at never goes back', async (test) => {
    if (t.database.handle.kind !== 'postgres') {
      test.skip('needs two transactions at once: PGlite runs one at a time, so nothing commits out of order there')
      return
    }
    // In two cities: a change raises its city's catalogue version (catalogue_versions), and two
    // changes in one city wait for each other there.
    const [slow, fast] = [await publish(), await publish(agency, { location: { city_id: 2, address: 'Невский проспект, 1' } })]
    const cursor = await snapshot()
    let releaseSlow!: () => void
    const slowHeld = new Promise<void>((resolve) => (releaseSlow = resolve))
    let slowChanged!: () => void
    const slowHasChanged = new Promise<void>((resolve) => (slowChanged = resolve))
    // The slow transaction changes its listing first and commits last. Descriptions: the
    // catalogue shows them and no count depends on them, so neither waits for the other.
    const slowCommit = t.db.transaction(async (tx) => {
      await tx.execute(sql`update properties set description = description || '.' where id = ${slow}`)
      slowChanged()
      await slowHeld
    })
    await slowHasChanged
    await t.db.execute(sql`update properties set description = description || '.' where id = ${fast}`)
    const early = await changesAfter(cursor)
    assert.deepEqual(
      early.items.map((item) => item.id),
      [fast],
    )
    releaseSlow()
    await slowCommit
    const late = await changesAfter(early.cursor)
    assert.deepEqual(
      late.items.map((item) => item.id),
      [slow],
      'the change that committed last comes after the cursor read before it',
    )
    const stored = await t.db
      .select({ id: catalogueChanges.listingId, position: catalogueChanges.position })
      .from(catalogueChanges)
      .where(inArray(catalogueChanges.listingId, [slow, fast]))
    const position = new Map(stored.map((row) => [row.id, row.position!]))
    assert.ok(position.get(slow)! > position.get(fast)!)
    const [fastAt, slowAt] = [early.items[0]!.changed_at, late.items[0]!.changed_at]
    assert.ok(Date.parse(slowAt) >= Date.parse(fastAt), `the change listed last says it changed at ${slowAt}, before ${fastAt}`)
  })
})
