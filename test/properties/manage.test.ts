import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { eq } from 'drizzle-orm'
import { properties } from '../../src/db/schema.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { ErrorBody, PropertyPage, StatusConflictBody, ValidationErrorBody } from '../helpers/responses.js'

describe('the tenant’s properties: list, read, change, delete, status', () => {
  let t: TestApp
  let agency: Tenant
  let other: Tenant
  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app)
    other = await createTenant(t.app, { email: 'other@agency.example' })
  })
  after(() => t.close())

  const call = (method: 'GET' | 'PATCH' | 'DELETE' | 'POST', url: string, payload?: object, tenant: Tenant = agency) =>
    t.app.inject({ method, url, headers: tenant.headers, ...(payload ? { payload } : {}) })

  describe('GET /properties', () => {
    let ids: number[]
    before(async () => {
      ids = []
      ids.push((await submitProperty(t.app, agency, { property_type: 'Квартира', deal_type: 'Продажа', location: { city_id: 1 } })).id)
      ids.push((await submitProperty(t.app, agency, { property_type: 'Дом', deal_type: 'Продажа', location: { city_id: 2 }, attributes: { area: '120' } })).id)
      ids.push(
        (await submitProperty(t.app, agency, { property_type: 'Квартира', deal_type: 'Долгосрочная аренда', price: 45000, location: { city_id: 1 } })).id,
      )
      await submitProperty(t.app, other, { location: { city_id: 1 } })
    })

    it('lists only the caller’s properties, newest first, each in its short list form', async () => {
      const response = await call('GET', '/properties')
      assert.equal(response.statusCode, 200)
      const page = response.json<PropertyPage>()
      assert.deepEqual(Object.keys(page).sort(), ['items', 'limit', 'next_cursor', 'offset', 'total'])
      assert.equal(page.next_cursor, null, 'one page holds them all')
      assert.equal(page.total, 3)
      assert.equal(page.limit, 50)
      assert.equal(page.offset, 0)
      assert.deepEqual(
        page.items.map((item) => item.id),
        [...ids].reverse(),
      )
      const item = page.items[0]!
      assert.deepEqual(Object.keys(item).sort(), [
        'area',
        'city',
        'created_at',
        'deal_type',
        'district',
        'external_id',
        'id',
        'price',
        'property_type',
        'rooms',
        'status_id',
        'status_name',
        'updated_at',
      ])
      assert.equal(item.property_type, 'Квартира')
      assert.equal(item.deal_type, 'Долгосрочная аренда')
      assert.equal(item.price, 45000)
      assert.equal(item.status_id, 1)
      assert.equal(item.status_name, 'На проверке')
      assert.deepEqual(item.city, { id: 1, name: 'Москва' })
      assert.equal(item.district, null)
      assert.equal(item.area, 54.5)
      assert.equal(item.rooms, 2)
      assert.match(item.created_at, /\+00:00$/)
      assert.match(item.updated_at, /\+00:00$/)
    })

    it('filters by property_type, deal_type, city_id and status_id', async () => {
      const filtered = async (query: string) => (await call('GET', `/properties?${query}`)).json<PropertyPage>()
      assert.deepEqual(
        (await filtered('property_type=Дом')).items.map((i) => i.id),
        [ids[1]],
      )
      assert.equal((await filtered('deal_type=Продажа')).total, 2)
      assert.equal((await filtered('city_id=1')).total, 2)
      assert.equal((await filtered('city_id=1&deal_type=Долгосрочная аренда')).total, 1)
      assert.equal((await filtered('status_id=1')).total, 3)
      assert.equal((await filtered('status_id=2')).total, 0)
      assert.equal((await filtered(`property_type=${encodeURIComponent('Земля')}`)).total, 0)
    })

    it('pages with limit and offset and echoes them', async () => {
      const first = (await call('GET', '/properties?limit=2')).json<PropertyPage>()
      assert.equal(first.items.length, 2)
      assert.equal(first.total, 3)
      assert.equal(first.limit, 2)
      const second = (await call('GET', '/properties?limit=2&offset=2')).json<PropertyPage>()
      assert.deepEqual(
        second.items.map((i) => i.id),
        [ids[0]],
      )
      assert.equal(second.offset, 2)
      const beyond = (await call('GET', '/properties?offset=10')).json<PropertyPage>()
      assert.deepEqual(beyond.items, [])
      assert.equal(beyond.total, 3)
      assert.equal((await call('GET', '/properties?limit=1')).json<PropertyPage>().items.length, 1)
      assert.equal((await call('GET', '/properties?limit=100')).statusCode, 200)
    })

    for (const query of [
      'limit=0',
      'limit=101',
      'limit=-1',
      'offset=-1',
      'offset=100000000000000000000',
      'limit=ten',
      'status_id=x',
      'city_id=0',
      'property_type=квартира',
      'deal_type=Rent',
    ]) {
      it(`answers 422 for ${query}`, async () => {
        const response = await call('GET', `/properties?${query}`)
        assert.equal(response.statusCode, 422)
        assert.equal(response.json<ValidationErrorBody>().errors[0]?.loc[0], 'query')
      })
    }

    it('answers 401 without a key', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/properties' })
      assert.equal(response.statusCode, 401)
      assert.deepEqual(response.json<ErrorBody>(), { detail: 'Invalid or missing API key' })
    })
  })

  describe('GET /properties/{id}', () => {
    it('reads the caller’s property; another tenant’s is a 404', async () => {
      const created = await submitProperty(t.app, agency)
      const response = await call('GET', `/properties/${created.id}`)
      assert.equal(response.statusCode, 200)
      assert.equal(response.json<Property>().id, created.id)
      const foreign = await call('GET', `/properties/${created.id}`, undefined, other)
      assert.equal(foreign.statusCode, 404)
      assert.deepEqual(foreign.json<ErrorBody>(), { detail: 'Property not found' })
      assert.equal((await call('GET', '/properties/999999')).statusCode, 404)
      assert.equal((await call('GET', '/properties/abc')).statusCode, 422)
    })
  })

  describe('PATCH /properties/{id}', () => {
    it('changes only what is sent, merges attributes and sends the change to the check, the listing staying published', async () => {
      const created = await submitProperty(t.app, agency, { attributes: { area: '60', rooms: '3', furniture: 'Полная' } })
      await runInternalCheck(t.app)
      assert.equal((await call('GET', `/properties/${created.id}`)).json<Property>().status_id, 2)

      const response = await call('PATCH', `/properties/${created.id}`, {
        price: 9100000,
        attributes: { rooms: '2', furniture: null, condition: 'Евроремонт' },
      })
      assert.equal(response.statusCode, 200, response.body)
      const changed = response.json<Property>()
      assert.equal(changed.price, 9100000)
      assert.equal(changed.status_id, 2)
      assert.equal(changed.revision?.status, 'pending_review')
      assert.deepEqual(changed.attributes, { area: 60, rooms: 2, condition: 'Евроремонт' })
      assert.equal(changed.owner?.phone, '+7 912 345-67-89', 'owner kept')
      assert.equal(changed.location?.city_id, 1, 'location kept')
      // The row keeps the approved version until the check passes the change.
      const [row] = await t.db.select().from(properties).where(eq(properties.id, created.id))
      assert.equal(row?.rooms, 3)
      assert.ok(row?.reviewRequestedAt)
      await runInternalCheck(t.app)
      const [approved] = await t.db.select().from(properties).where(eq(properties.id, created.id))
      assert.equal(approved?.rooms, 2)
      assert.equal(approved?.reviewRequestedAt, null)
      assert.equal((await call('GET', `/properties/${created.id}`)).json<Property>().revision, null)
    })

    it('leaves the listing as it is when the PATCH changes nothing (a retry keeps it published)', async () => {
      const created = await submitProperty(t.app, agency)
      await runInternalCheck(t.app)
      const before = (await call('GET', `/properties/${created.id}`)).json<Property>()
      assert.equal(before.status_id, 2)
      // The location as it was submitted: its ids and texts, without the names the view adds.
      const { city: _city, district: _district, residential_complex: _complex, ...location } = before.location as Record<string, unknown>
      const submittedLocation = Object.fromEntries(Object.entries(location).filter(([, value]) => value !== null))
      const sameAgain = [
        { price: 8500000 },
        { price: '8500000.00', description: before.description },
        // the owner's phone in another format, its notes left out (kept), attributes in another order and form
        { owner: { name: 'Иван Петров', phone: '+79123456789' }, attributes: { rooms: 2, area: '54.50' } },
        { location: submittedLocation, property_type: 'Квартира', deal_type: 'Продажа' },
      ]
      for (const payload of sameAgain) {
        const response = await call('PATCH', `/properties/${created.id}`, payload)
        assert.equal(response.statusCode, 200, response.body)
        assert.deepEqual(response.json<Property>(), before, JSON.stringify(payload))
      }
      assert.equal((await t.app.inject(`/mls/properties/${created.id}`)).statusCode, 200, 'still in the catalogue')
      // Coordinates finer than the column keeps (a map widget's 7 decimals): stored rounded, and a
      // retry of the same PATCH is no change.
      const placed = { location: { ...submittedLocation, latitude: 55.7558264, longitude: 37.6172999 } }
      const first = (await call('PATCH', `/properties/${created.id}`, placed)).json<Property>()
      assert.deepEqual(
        [first.location?.latitude, first.location?.longitude, first.status_id, first.revision?.status],
        [55.755826, 37.6173, 2, 'pending_review'],
      )
      await runInternalCheck(t.app)
      const retried = (await call('PATCH', `/properties/${created.id}`, placed)).json<Property>()
      assert.deepEqual([retried.status_id, retried.revision], [2, null], 'the retry changed nothing')
      // The owner's notes are the agency's own, never in the catalogue: changed at once, nothing to check.
      const changed = (
        await call('PATCH', `/properties/${created.id}`, { owner: { name: 'Иван Петров', phone: '+79123456789', notes: 'Звонить до 18:00' } })
      ).json<Property>()
      assert.deepEqual([changed.status_id, changed.revision], [2, null])
      assert.equal(changed.owner?.notes, 'Звонить до 18:00')
      // Any other real change is checked; until then the catalogue shows the approved version.
      const priced = (await call('PATCH', `/properties/${created.id}`, { price: 7_900_000 })).json<Property>()
      assert.deepEqual([priced.status_id, priced.price, priced.revision?.status], [2, 7_900_000, 'pending_review'])
      assert.equal((await t.app.inject(`/mls/properties/${created.id}`)).json<{ price: number }>().price, 8_500_000)
    })

    it('clears the location and the owner with null', async () => {
      const created = await submitProperty(t.app, agency)
      const changed = (await call('PATCH', `/properties/${created.id}`, { location: null, owner: null, description: null })).json<Property>()
      assert.equal(changed.location, null)
      assert.equal(changed.owner, null)
      assert.equal(changed.description, null)
    })

    it('validates like a submission and changes nothing on 422', async () => {
      const created = await submitProperty(t.app, agency)
      for (const payload of [
        {},
        { price: 'x' },
        { attributes: { rooms: 'many' } },
        { status_id: 2 },
        { location: { city_id: 2, district_id: 1 } },
        { property_type: 'дом' },
      ]) {
        const response = await call('PATCH', `/properties/${created.id}`, payload)
        assert.equal(response.statusCode, 422, JSON.stringify(payload))
      }
      const unchanged = (await call('GET', `/properties/${created.id}`)).json<Property>()
      assert.equal(unchanged.price, 8500000)
    })

    it('refuses to change a closed listing (409) and another tenant’s (404)', async () => {
      const created = await submitProperty(t.app, agency)
      await runInternalCheck(t.app)
      assert.equal((await call('POST', `/properties/${created.id}/status`, { status_id: 5 })).statusCode, 200)
      const closed = await call('PATCH', `/properties/${created.id}`, { price: 1 })
      assert.equal(closed.statusCode, 409)
      const foreign = await call('PATCH', `/properties/${created.id}`, { price: 1 }, other)
      assert.equal(foreign.statusCode, 404)
      assert.equal((await call('GET', `/properties/${created.id}`)).json<Property>().price, 8500000)
    })
  })

  describe('POST /properties/{id}/status', () => {
    it('allows exactly the moves a tenant may make between statuses', async () => {
      const created = await submitProperty(t.app, agency)
      const move = (statusId: number) => call('POST', `/properties/${created.id}/status`, { status_id: statusId })

      // 1 (waiting for review): no tenant move.
      const early = await move(4)
      assert.equal(early.statusCode, 409)
      assert.deepEqual(early.json<StatusConflictBody>().allowed_moves, [])

      await runInternalCheck(t.app)
      const blocked = await move(3)
      assert.equal(blocked.statusCode, 409)
      assert.deepEqual(blocked.json<StatusConflictBody>().allowed_moves, [4, 5])
      assert.match(blocked.json<StatusConflictBody>().detail, /allowed moves from here: 4, 5/)

      const withdrawn = await move(4)
      assert.equal(withdrawn.statusCode, 200)
      assert.equal(withdrawn.json<Property>().status_id, 4)
      assert.equal(withdrawn.json<Property>().status_name, 'Снято с публикации')
      assert.equal((await move(5)).statusCode, 409)

      const resubmitted = await move(1)
      assert.equal(resubmitted.json<Property>().status_id, 1)
      await runInternalCheck(t.app)
      assert.equal((await call('GET', `/properties/${created.id}`)).json<Property>().status_id, 2)

      assert.equal((await move(5)).json<Property>().status_name, 'Сделка закрыта')
      const final = await move(1)
      assert.equal(final.statusCode, 409)
      assert.deepEqual(final.json<StatusConflictBody>().allowed_moves, [])
    })

    it('lets a rejected listing be resubmitted', async () => {
      const created = await submitProperty(t.app, agency, { price: null })
      await runInternalCheck(t.app)
      assert.equal((await call('GET', `/properties/${created.id}`)).json<Property>().status_id, 3)
      assert.equal((await call('POST', `/properties/${created.id}/status`, { status_id: 1 })).json<Property>().status_id, 1)
    })

    it('answers 422 for an unknown status and 404 for another tenant’s property', async () => {
      const created = await submitProperty(t.app, agency)
      assert.equal((await call('POST', `/properties/${created.id}/status`, { status_id: 9 })).statusCode, 422)
      assert.equal((await call('POST', `/properties/${created.id}/status`, {})).statusCode, 422)
      assert.equal((await call('POST', `/properties/${created.id}/status`, { status_id: 4 }, other)).statusCode, 404)
    })
  })

  describe('DELETE /properties/{id}', () => {
    it('deletes the caller’s property; another tenant gets 404 and it stays', async () => {
      const created = await submitProperty(t.app, agency)
      const foreign = await call('DELETE', `/properties/${created.id}`, undefined, other)
      assert.equal(foreign.statusCode, 404)
      assert.equal(await t.db.$count(properties, eq(properties.id, created.id)), 1)
      const deleted = await call('DELETE', `/properties/${created.id}`)
      assert.equal(deleted.statusCode, 204)
      assert.equal(deleted.body, '')
      assert.equal(await t.db.$count(properties, eq(properties.id, created.id)), 0)
      assert.equal((await call('DELETE', `/properties/${created.id}`)).statusCode, 404)
    })
  })
})
