import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { eq, sql } from 'drizzle-orm'
import { properties } from '../../src/db/schema.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders, createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'

/**
 * Decisions on listings at their edges: an operator approving what cannot be published, text
 * that is not Unicode, and a revision copying another live listing to the last decimal.
 */
describe('operators’ decisions at the edges (MODERATION_MODE=manual)', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp({ MODERATION_MODE: 'manual' })
    agency = await createTenant(t.app, { email: 'manual-edges@agency.example' })
  })
  after(() => t.close())

  const admin = (action: 'approve' | 'reject', id: number, payload?: string) =>
    t.app.inject({
      method: 'POST',
      url: `/admin/properties/${id}/${action}`,
      headers: payload === undefined ? adminHeaders : { ...adminHeaders, 'content-type': 'application/json' },
      ...(payload === undefined ? {} : { payload }),
    })
  const rawPatch = (id: number, payload: string) =>
    t.app.inject({ method: 'PATCH', url: `/properties/${id}`, headers: { ...agency.headers, 'content-type': 'application/json' }, payload })
  const publish = async () => {
    const { id } = await submitProperty(t.app, agency)
    assert.equal((await admin('approve', id)).statusCode, 200)
    return id
  }

  it('refuses an operator’s approval of a listing without a location with a 409', async () => {
    const listing = await submitProperty(t.app, agency, { location: null })
    await runInternalCheck(t.app) // manual: findings only (location_missing)
    const response = await admin('approve', listing.id)
    assert.equal(response.statusCode, 409, response.body)
    assert.match(response.json<{ detail: string }>().detail, /no location/)
  })

  it('refuses an operator’s approval of a revision that removed the location with a 409, and keeps the approved version online', async () => {
    const id = await publish()
    const patched = await t.app.inject({ method: 'PATCH', url: `/properties/${id}`, headers: agency.headers, payload: { location: null } })
    assert.equal(patched.json<Property>().revision?.status, 'pending_review')
    const response = await admin('approve', id)
    assert.equal(response.statusCode, 409, response.body)
    assert.equal((await t.app.inject(`/mls/properties/${id}`)).statusCode, 200)
  })

  it('refuses half a surrogate pair in a PATCH with a 422 naming the field, whether the listing is published or not', async () => {
    const pending = await submitProperty(t.app, agency)
    const id = await publish()
    for (const listing of [pending.id, id]) {
      const response = await rawPatch(listing, '{"description": "Уютная\\ud800 квартира"}')
      assert.equal(response.statusCode, 422, response.body)
      assert.deepEqual(
        response.json<{ errors: { loc: string[] }[] }>().errors.map((error) => error.loc),
        [['body', 'description']],
      )
    }
    // A pair (an emoji) is a character like any other.
    assert.equal((await rawPatch(pending.id, '{"description": "Уютная \\ud83c\\udfe0 квартира"}')).statusCode, 200)
  })

  it('keeps a revision’s findings when its listing leaves the catalogue with it: the reasons of a rejected one, none for one never checked', async () => {
    const view = async (id: number) => (await t.app.inject({ method: 'GET', url: `/properties/${id}`, headers: agency.headers })).json<Property>()
    const leave = (id: number, statusId: number) =>
      t.app.inject({ method: 'POST', url: `/properties/${id}/status`, headers: agency.headers, payload: { status_id: statusId } })
    for (const statusId of [4, 5]) {
      const rejected = await publish()
      assert.equal(
        (await t.app.inject({ method: 'PATCH', url: `/properties/${rejected}`, headers: agency.headers, payload: { price: 1_000 } })).statusCode,
        200,
      )
      assert.equal((await admin('reject', rejected, JSON.stringify({ reason: 'Цена не похожа на настоящую' }))).statusCode, 200)
      const reasons = (await view(rejected)).revision?.moderation?.reasons
      assert.ok(
        reasons?.some((reason) => reason.message === 'Цена не похожа на настоящую'),
        JSON.stringify(reasons),
      )
      assert.equal((await leave(rejected, statusId)).statusCode, 200)
      const left = await view(rejected)
      // The listing is now the rejected version, and says why that version was rejected.
      assert.deepEqual([left.status_id, left.price, left.revision], [statusId, 1_000, null])
      assert.deepEqual(left.moderation?.reasons, reasons)

      const unchecked = await publish()
      assert.equal(
        (await t.app.inject({ method: 'PATCH', url: `/properties/${unchecked}`, headers: agency.headers, payload: { price: 2_000 } })).statusCode,
        200,
      )
      assert.equal((await leave(unchecked, statusId)).statusCode, 200)
      const withdrawn = await view(unchecked)
      // The approval's findings were about the version the edit replaced: nothing checked this one.
      assert.deepEqual([withdrawn.status_id, withdrawn.price, withdrawn.moderation], [statusId, 2_000, null])
    }
  })

  it('leaves a rejected revision rejected when a PATCH renames its owner only: the owner is the same, the version the check rejected too', async () => {
    const view = async (id: number) => (await t.app.inject({ method: 'GET', url: `/properties/${id}`, headers: agency.headers })).json<Property>()
    const id = await publish()
    assert.equal((await t.app.inject({ method: 'PATCH', url: `/properties/${id}`, headers: agency.headers, payload: { price: 3_000 } })).statusCode, 200)
    assert.equal((await admin('reject', id, JSON.stringify({ reason: 'Цена не похожа на настоящую' }))).statusCode, 200)
    const before = await view(id)
    assert.equal(before.revision?.status, 'rejected')
    const phone = before.owner!.phone
    const renamed = await t.app.inject({
      method: 'PATCH',
      url: `/properties/${id}`,
      headers: agency.headers,
      payload: { owner: { name: 'Анна Петрова', phone } },
    })
    assert.equal(renamed.statusCode, 200, renamed.body)
    const after = renamed.json<Property>()
    assert.equal(after.owner?.name, 'Анна Петрова')
    assert.deepEqual(after.revision, before.revision, 'the rejected version was not sent back to the check unchanged')
    assert.deepEqual((await view(id)).revision, before.revision)
  })

  it('rejects a listing edited since its findings with the operator’s reason alone, not the findings of the version it replaced', async () => {
    const { id } = await submitProperty(t.app, agency, { price: 0 })
    await runInternalCheck(t.app) // manual: findings only (price_not_positive)
    const fixed = await t.app.inject({ method: 'PATCH', url: `/properties/${id}`, headers: agency.headers, payload: { price: 7_200_000 } })
    assert.equal(fixed.statusCode, 200, fixed.body)
    // Before the check has read the new price, an operator rejects the listing for a reason of their own.
    const rejected = await admin('reject', id, JSON.stringify({ reason: 'Фотографии не соответствуют описанию' }))
    assert.equal(rejected.statusCode, 200, rejected.body)
    const mine = (await t.app.inject({ url: `/properties/${id}`, headers: agency.headers })).json<Property>()
    assert.equal(mine.status_id, 3)
    assert.deepEqual(
      mine.moderation?.reasons.map((reason) => reason.code),
      ['rejected_by_moderator'],
    )

    // Once the check has read a version, its findings come with the operator's reason.
    const again = await t.app.inject({ method: 'PATCH', url: `/properties/${id}`, headers: agency.headers, payload: { price: 0 } })
    assert.equal(again.statusCode, 200, again.body)
    await runInternalCheck(t.app)
    assert.equal((await admin('reject', id)).statusCode, 200)
    const checked = (await t.app.inject({ url: `/properties/${id}`, headers: agency.headers })).json<Property>()
    assert.deepEqual(
      checked.moderation?.reasons.map((reason) => reason.code),
      ['price_not_positive', 'rejected_by_moderator'],
    )
  })

  it('refuses an operator’s rejection whose reason holds half a surrogate pair with a 422', async () => {
    const listing = await submitProperty(t.app, agency)
    const response = await admin('reject', listing.id, '{"reason": "Фото\\udc00 не того дома"}')
    assert.equal(response.statusCode, 422, response.body)
  })
})

describe('the internal check on revisions at the edges (MODERATION_MODE=auto)', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app, { email: 'auto-edges@agency.example' })
  })
  after(() => t.close())

  const call = (method: 'GET' | 'PATCH', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: agency.headers, ...(payload ? { payload } : {}) })

  it('finds a published listing edited into a copy of another live one a duplicate', async () => {
    const area = '54.55'
    const address = 'Москва, ул. Арбат, д. 7'
    const original = await submitProperty(t.app, agency, { location: { city_id: 1, district_id: 1, address }, attributes: { area, rooms: '2' } })
    const other = await submitProperty(t.app, agency, {
      location: { city_id: 1, district_id: 1, address: 'Москва, ул. Арбат, д. 9' },
      attributes: { area, rooms: '2' },
    })
    await runInternalCheck(t.app)
    assert.equal((await call('GET', `/properties/${original.id}`)).json<Property>().status_id, 2)
    assert.equal((await call('GET', `/properties/${other.id}`)).json<Property>().status_id, 2)

    // The same copy as a new submission is caught:
    const copy = await submitProperty(t.app, agency, { location: { city_id: 1, district_id: 1, address }, attributes: { area, rooms: '2' } })
    await runInternalCheck(t.app)
    const copied = (await call('GET', `/properties/${copy.id}`)).json<Property>()
    assert.deepEqual([copied.status_id, copied.moderation?.reasons.map((reason) => reason.code)], [3, ['duplicate_listing']])

    // … and so is the same copy as a revision of a published listing, whose area is taken from
    // its attributes where the other's is read from its column.
    assert.equal((await call('PATCH', `/properties/${other.id}`, { location: { city_id: 1, district_id: 1, address } })).statusCode, 200)
    await runInternalCheck(t.app)
    const edited = (await call('GET', `/properties/${other.id}`)).json<Property>()
    assert.equal(edited.revision?.status, 'rejected', 'the edit into a copy of a live listing must be rejected as a duplicate')
    assert.deepEqual(
      edited.revision?.moderation?.reasons.map((reason) => reason.code),
      ['duplicate_listing'],
    )
  })

  it('refuses with a 409 the edits and moves that reach a listing its agency’s suspension has just taken out', async () => {
    const { id } = await submitProperty(t.app, agency)
    await runInternalCheck(t.app)
    assert.equal((await call('GET', `/properties/${id}`)).json<Property>().status_id, 2)
    // What the suspension does to the agency's published listings, committed while these requests were on their way.
    await t.db.execute(sql`update properties set status_id = 4, held_status_id = 2 where id = ${id}::int`)
    const patched = await call('PATCH', `/properties/${id}`, { price: 4_000_000 })
    assert.equal(patched.statusCode, 409, patched.body)
    assert.match(patched.json<{ detail: string }>().detail, /suspended/)
    const moved = await t.app.inject({ method: 'POST', url: `/properties/${id}/status`, headers: agency.headers, payload: { status_id: 1 } })
    assert.equal(moved.statusCode, 409, moved.body)
    const [row] = await t.db.select().from(properties).where(eq(properties.id, id))
    assert.deepEqual([row?.statusId, row?.heldStatusId, Number(row?.price)], [4, 2, 8_500_000])
  })
})
