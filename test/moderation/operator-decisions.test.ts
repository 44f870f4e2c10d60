import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders, createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { ErrorBody, ListingUnderReviewPage, ValidationErrorBody } from '../helpers/responses.js'

describe('the internal check on areas', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app)
  })
  after(() => t.close())

  it('publishes a listing whose living and kitchen areas add up exactly to its total area, as decimals do not in binary', async () => {
    // 32.2 + 8.1 is 40.300000000000004 and 30.1 + 10.3 is 40.400000000000006 in binary fractions.
    for (const [area, living, kitchen] of [
      ['40.3', '32.2', '8.1'],
      ['40.4', '30.1', '10.3'],
    ]) {
      const created = await submitProperty(t.app, agency, {
        attributes: { area: area!, living_area: living!, kitchen_area: kitchen!, rooms: '2', floor: '5', total_floors: '9' },
      })
      await runInternalCheck(t.app)
      const listing = (await t.app.inject({ url: `/properties/${created.id}`, headers: agency.headers })).json<Property>()
      assert.deepEqual(listing.moderation?.reasons, [], `${living} + ${kitchen} is not more than ${area}`)
      assert.equal(listing.status_id, 2)
    }
  })

  it('still rejects areas that add up to a hundredth more than the total, saying their sum as written', async () => {
    const created = await submitProperty(t.app, agency, { attributes: { area: '40.3', living_area: '32.2', kitchen_area: '8.11' } })
    await runInternalCheck(t.app)
    const listing = (await t.app.inject({ url: `/properties/${created.id}`, headers: agency.headers })).json<Property>()
    assert.equal(listing.status_id, 3)
    assert.deepEqual(
      listing.moderation?.reasons.map(({ code, message }) => ({ code, message })),
      [{ code: 'areas_exceed_total', message: 'Living and kitchen areas (40.31 m²) add up to more than the total area (40.3 m²).' }],
    )
  })
})

describe('operator decisions', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp({ MODERATION_MODE: 'manual' })
    agency = await createTenant(t.app)
  })
  after(() => t.close())

  const decide = (action: 'approve' | 'reject', id: number, payload?: object) =>
    t.app.inject({ method: 'POST', url: `/admin/properties/${id}/${action}`, headers: adminHeaders, ...(payload ? { payload } : {}) })
  const patch = (id: number, payload: object) => t.app.inject({ method: 'PATCH', url: `/properties/${id}`, headers: agency.headers, payload })
  const published = async () => {
    const created = await submitProperty(t.app, agency)
    const approved = await decide('approve', created.id)
    assert.equal(approved.statusCode, 200, approved.body)
    return created.id
  }

  it('refuses a rejection whose reason is blank with a 422, as an empty one, and rejects nothing', async () => {
    const created = await submitProperty(t.app, agency)
    for (const reason of ['   ', '\u200b']) {
      const rejected = await decide('reject', created.id, { reason })
      assert.equal(rejected.statusCode, 422, rejected.body)
      assert.deepEqual(rejected.json<ValidationErrorBody>().errors, [{ loc: ['body', 'reason'], msg: 'must not be blank: leave it out, or say why' }])
    }
    const listing = (await t.app.inject({ url: `/properties/${created.id}`, headers: agency.headers })).json<Property>()
    assert.equal(listing.status_id, 1)
    // Left out, the agency reads a general reason.
    const rejected = await decide('reject', created.id)
    assert.equal(rejected.statusCode, 200, rejected.body)
    const reasons = (await t.app.inject({ url: `/properties/${created.id}`, headers: agency.headers })).json<Property>().moderation?.reasons
    assert.equal(reasons?.at(-1)?.message, 'Rejected by a moderator.')
  })

  it('lists revisions waiting for a decision longest-waiting first, even after the agency renames the owner of the first', async () => {
    const first = await published()
    const second = await published()
    for (const id of [first, second]) assert.equal((await patch(id, { price: 7_900_000 })).statusCode, 200)
    await runInternalCheck(t.app)
    // The owner's name applies at once; the revision (and its submitted_at) stays as it was.
    const renamed = await patch(first, { owner: { name: 'Пётр Сидоров', phone: '8 (912) 345-67-89' } })
    assert.equal(renamed.statusCode, 200, renamed.body)
    assert.equal(renamed.json<Property>().revision?.status, 'pending_review')
    const queue = (await t.app.inject({ url: '/admin/properties?status_id=2&revision=pending_review&limit=100', headers: adminHeaders }))
      .json<ListingUnderReviewPage>()
      .items.filter((item) => item.id === first || item.id === second)
    assert.deepEqual(
      queue.map((item) => item.id),
      [first, second],
      'the revision submitted first has waited longest',
    )
  })

  it('shows the operator where a revision moves the listing: its district, complex, address and coordinates', async () => {
    const id = await published()
    const moved = { city_id: 1, district_id: 2, address: 'Москва, ул. Тверская, д. 9', latitude: 55.8702, longitude: 37.5011 }
    assert.equal((await patch(id, { location: moved })).statusCode, 200)
    await runInternalCheck(t.app)
    const item = (await t.app.inject({ url: '/admin/properties?revision=pending_review&limit=100', headers: adminHeaders }))
      .json<ListingUnderReviewPage>()
      .items.find((entry) => entry.id === id)
    assert.ok(item, 'the revision waits in the queue')
    assert.deepEqual(
      {
        district_id: item.district_id,
        residential_complex_id: item.residential_complex_id,
        address: item.address,
        latitude: item.latitude,
        longitude: item.longitude,
      },
      { district_id: 2, residential_complex_id: null, address: moved.address, latitude: moved.latitude, longitude: moved.longitude },
    )
  })

  it('lists revisions without status_id, as only a published listing has them; with another status it is a 422', async () => {
    const id = await published()
    assert.equal((await patch(id, { price: 7_250_000 })).statusCode, 200)
    const listed = await t.app.inject({ url: '/admin/properties?revision=pending_review&limit=100', headers: adminHeaders })
    assert.equal(listed.statusCode, 200, listed.body)
    assert.ok(listed.json<ListingUnderReviewPage>().items.some((item) => item.id === id))
    const refused = await t.app.inject({ url: '/admin/properties?status_id=1&revision=pending_review', headers: adminHeaders })
    assert.equal(refused.statusCode, 422, refused.body)
    assert.deepEqual(
      refused.json<ValidationErrorBody>().errors.map((error) => error.loc),
      [['query', 'status_id']],
    )
    // Without either, the listings waiting for review, as before.
    const waiting = await submitProperty(t.app, agency)
    const pending = (await t.app.inject({ url: '/admin/properties?limit=100', headers: adminHeaders })).json<ListingUnderReviewPage>()
    assert.ok(pending.items.some((item) => item.id === waiting.id))
    assert.ok(pending.items.every((item) => item.status_id === 1))
  })

  it('decides only the version the operator read, when given it: a revision changed since is a 409 and stays undecided', async () => {
    const id = await published()
    assert.equal((await patch(id, { price: 7_100_000 })).statusCode, 200)
    const read = async () =>
      (await t.app.inject({ url: '/admin/properties?revision=pending_review&limit=100', headers: adminHeaders }))
        .json<ListingUnderReviewPage>()
        .items.find((item) => item.id === id)!
    const seen = await read()
    assert.equal(seen.price, 7_100_000)
    // The agency changes the price again after the operator read the revision.
    assert.equal((await patch(id, { price: 9_900_000 })).statusCode, 200)
    for (const [action, payload] of [
      ['approve', { version: seen.version }],
      ['reject', { version: seen.version, reason: 'Цена завышена' }],
    ] as const) {
      const refused = await decide(action, id, payload)
      assert.equal(refused.statusCode, 409, refused.body)
      assert.match(refused.json<ErrorBody>().detail, /changed since/)
    }
    const now = await read()
    assert.equal(now.revision?.status, 'pending_review')
    assert.notEqual(now.version, seen.version)
    const catalogue = (await t.app.inject(`/mls/properties/${id}`)).json<{ price: number }>()
    assert.notEqual(catalogue.price, 9_900_000, 'nothing was approved')
    // The version read now is decided.
    const approved = await decide('approve', id, { version: now.version })
    assert.equal(approved.statusCode, 200, approved.body)
    assert.equal((await t.app.inject(`/mls/properties/${id}`)).json<{ price: number }>().price, 9_900_000)
  })

  it('decides a first submission given its version, and without one as before', async () => {
    const first = await submitProperty(t.app, agency)
    const second = await submitProperty(t.app, agency)
    const items = (await t.app.inject({ url: '/admin/properties?limit=100', headers: adminHeaders })).json<ListingUnderReviewPage>().items
    const version = items.find((item) => item.id === first.id)!.version
    assert.match(version, /^[\w-]{22}$/)
    // The agency's own id is bookkeeping, not an edit: re-keyed, the listing is the version read.
    assert.equal((await patch(first.id, { external_id: 'CRM-re-keyed' })).statusCode, 200)
    const approved = await decide('approve', first.id, { version })
    assert.equal(approved.statusCode, 200, approved.body)
    assert.equal((await decide('reject', second.id)).statusCode, 200)
    const unknown = await decide('approve', (await submitProperty(t.app, agency)).id, { version: 'x', extra: 1 })
    assert.equal(unknown.statusCode, 422, unknown.body)
  })

  it('refuses to decide a suspended agency’s revision with the suspension’s 409, not a status the listing never had', async () => {
    const id = await published()
    assert.equal((await patch(id, { price: 9_100_000 })).statusCode, 200)
    const suspended = await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/suspend`, headers: adminHeaders })
    assert.equal(suspended.statusCode, 200, suspended.body)
    try {
      for (const action of ['approve', 'reject'] as const) {
        const decided = await decide(action, id)
        assert.equal(decided.statusCode, 409, decided.body)
        assert.equal(
          decided.json<ErrorBody>().detail,
          `The listing’s agency is suspended; its listings cannot be ${action === 'approve' ? 'published' : 'rejected'} until it is unsuspended.`,
        )
      }
    } finally {
      await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/unsuspend`, headers: adminHeaders })
    }
    // Once unsuspended, the revision can be decided.
    assert.equal((await decide('approve', id)).statusCode, 200)
  })

  it('lists every waiting revision with its revision while another operator approves them', async () => {
    const waiting = async () =>
      (await t.app.inject({ url: '/admin/properties?revision=pending_review&limit=100', headers: adminHeaders })).json<ListingUnderReviewPage>().items
    for (let round = 1; round <= 10; round++) {
      const ids = await Promise.all([published(), published(), published()])
      for (const id of ids) assert.equal((await patch(id, { price: 8_000_000 + round })).statusCode, 200)
      const check = (items: Awaited<ReturnType<typeof waiting>>) => {
        for (const item of items.filter((entry) => ids.includes(entry.id))) {
          assert.equal(item.revision?.status, 'pending_review', `round ${round}: listing ${item.id} listed as ${JSON.stringify(item.revision)}`)
          assert.equal(item.price, 8_000_000 + round)
        }
      }
      const before = await waiting()
      assert.equal(before.filter((item) => ids.includes(item.id)).length, 3, 'the three revisions wait')
      check(before)
      // Read while the approvals commit: a listing is listed with its revision or not at all.
      let approving = true
      const approvals = Promise.all(ids.map((id) => decide('approve', id))).finally(() => (approving = false))
      const reader = async () => {
        do check(await waiting())
        while (approving)
      }
      await Promise.all([approvals, reader(), reader(), reader()])
      for (const approved of await approvals) assert.equal(approved.statusCode, 200, approved.body)
    }
  })
})
