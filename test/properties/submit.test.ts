import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { eq } from 'drizzle-orm'
import { owners, properties } from '../../src/db/schema.js'
import { attributeCatalogue } from '../../src/modules/reference/attribute-catalogue.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { createTenant, propertyBody, submitProperty, type Tenant } from '../helpers/factories.js'
import type { ErrorBody, ValidationErrorBody } from '../helpers/responses.js'

describe('POST /properties', () => {
  let t: TestApp
  let agency: Tenant
  let other: Tenant
  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app, { company_name: 'Агентство А' })
    other = await createTenant(t.app, { company_name: 'Агентство Б' })
  })
  after(() => t.close())

  const submit = (payload: unknown, headers: Record<string, string> = agency.headers) =>
    t.app.inject({ method: 'POST', url: '/properties', headers, payload: payload as object })

  it('creates the property in status 1 and answers 201 with the full property', async () => {
    const body = propertyBody({
      price: '8500000.50',
      location: {
        city_id: 1,
        district_id: 9,
        residential_complex_id: 4,
        address: 'Москва, ул. Тверская, д. 7, кв. 12',
        street: 'Тверская',
        house_number: '7',
        apartment_number: '12',
        latitude: '55.7577',
        longitude: 37.6133,
      },
      attributes: { area: '54.5', rooms: '2', elevator: 'true', balcony_glazed: false, bathroom: 'Совмещённый', ceiling_height: 2.7 },
    })
    const response = await submit(body)
    assert.equal(response.statusCode, 201, response.body)
    const created = response.json<Property>()
    assert.equal(response.headers.location, `/properties/${created.id}`)
    assert.equal(created.status_id, 1)
    assert.equal(created.status_name, 'На проверке')
    assert.equal(created.property_type, 'Квартира')
    assert.equal(created.deal_type, 'Продажа')
    assert.equal(created.price, 8500000.5)
    assert.deepEqual(created.owner, { id: created.owner?.id, name: 'Иван Петров', phone: '+7 912 345-67-89', notes: 'Звонить после 18:00' })
    assert.deepEqual(created.location, {
      city_id: 1,
      district_id: 9,
      residential_complex_id: 4,
      address: 'Москва, ул. Тверская, д. 7, кв. 12',
      street: 'Тверская',
      house_number: '7',
      apartment_number: '12',
      latitude: 55.7577,
      longitude: 37.6133,
      city: { id: 1, name: 'Москва' },
      district: { id: 9, name: 'Северо-Западный административный округ' },
      residential_complex: { id: 4, name: 'Алые Паруса' },
    })
    assert.deepEqual(created.attributes, { area: 54.5, rooms: 2, elevator: true, balcony_glazed: false, bathroom: 'Совмещённый', ceiling_height: 2.7 })
    assert.equal(created.moderation, null)
    assert.deepEqual(created.images, [])
    assert.equal(created.published_at, null)
    assert.match(created.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/)

    const [row] = await t.db.select().from(properties).where(eq(properties.id, created.id))
    assert.equal(row?.tenantId, agency.tenantId)
    assert.equal(row?.area, 54.5)
    assert.equal(row?.rooms, 2)
    assert.deepEqual(row?.attributes, created.attributes)
    assert.ok(row?.reviewRequestedAt instanceof Date, 'waits for the internal check')
  })

  it('needs only property_type and deal_type', async () => {
    const response = await submit({ property_type: 'Земля', deal_type: 'Долгосрочная аренда' })
    assert.equal(response.statusCode, 201, response.body)
    const created = response.json<Property>()
    assert.equal(created.owner, null)
    assert.equal(created.location, null)
    assert.equal(created.price, null)
    assert.deepEqual(created.attributes, {})
  })

  it('upserts the owner by normalised phone within the tenant only', async () => {
    const first = await submitProperty(t.app, agency, { owner: { name: 'Пётр Сидоров', phone: '+7 (903) 111-22-33', notes: 'первый' } })
    const second = await submitProperty(t.app, agency, { owner: { name: 'Пётр Сидоров-Иванов', phone: '89031112233' } })
    assert.equal(second.owner!.id, first.owner!.id)
    const [owner] = await t.db.select().from(owners).where(eq(owners.id, first.owner!.id))
    assert.equal(owner?.name, 'Пётр Сидоров-Иванов')
    assert.equal(owner?.phone, '+7 903 111-22-33')
    assert.equal(owner?.notes, 'первый', 'notes not sent are kept')

    const elsewhere = await submitProperty(t.app, other, { owner: { name: 'Другой владелец', phone: '8 903 111 22 33', notes: 'чужой' } })
    assert.notEqual(elsewhere.owner!.id, first.owner!.id)
    const [untouched] = await t.db.select().from(owners).where(eq(owners.id, first.owner!.id))
    assert.equal(untouched?.name, 'Пётр Сидоров-Иванов')
    assert.equal(untouched?.notes, 'первый')
  })

  it('keeps a phone’s extension: an office’s extension is another owner than the office, and renames nobody', async () => {
    const office = await submitProperty(t.app, agency, { owner: { name: 'Офис, приёмная', phone: '8 (912) 111-22-33' } })
    for (const phone of ['8 (912) 111-22-33 доб. 5', '+7 912 111 22 33 ext. 5', '89121112233#5']) {
      const extension = await submitProperty(t.app, agency, { owner: { name: 'Сергей Иванов', phone } })
      assert.notEqual(extension.owner!.id, office.owner!.id, phone)
      assert.equal(extension.owner!.phone, '+7 912 111-22-33 доб. 5', phone)
    }
    const [kept] = await t.db.select().from(owners).where(eq(owners.id, office.owner!.id))
    assert.equal(kept?.name, 'Офис, приёмная')
  })

  it('reads owner phones as the agency’s country’s', async () => {
    const kazakh = await createTenant(t.app, { country: 'KZ', email: 'kz@agency.example' })
    const created = await submitProperty(t.app, kazakh, { owner: { name: 'Айгерим', phone: '8 701 234 5678' }, location: { city_id: 17 } })
    const [owner] = await t.db.select().from(owners).where(eq(owners.id, created.owner!.id))
    assert.equal(owner?.phone, '+7 701 234-56-78')
    const german = await createTenant(t.app, { country: 'DE', email: 'de@agency.example', phone: '+49 30 1234567' })
    const berlin = await submitProperty(t.app, german, { owner: { name: 'Hans', phone: '030 1234567' } })
    const [berliner] = await t.db.select().from(owners).where(eq(owners.id, berlin.owner!.id))
    assert.equal(berliner?.phone, '+49 30 1234567')
  })

  it('takes a +7 number written with its 7 and no plus from a Kazakh agency, whatever its range, as from a Russian one', async () => {
    // interface.md §2.2: any format, read as the agency's country's; Kazakhstan's code is 7 too.
    const kazakh = await createTenant(t.app, { country: 'KZ', email: 'kz-seven@agency.example' })
    for (const [phone, expected] of [
      ['7 (912) 345-67-89', '+7 912 345-67-89'],
      ['74951234567', '+7 495 123-45-67'],
      ['77011234567', '+7 701 123-45-67'],
    ] as const) {
      const created = await submitProperty(t.app, kazakh, { owner: { name: 'Айгерим', phone }, location: { city_id: 17 } })
      assert.equal(created.owner?.phone, expected, phone)
    }
  })

  it('takes any price in whole kopecks, however its binary fraction rounds', async () => {
    // 1234567.89 / 0.01 is 123456788.99999999 in binary: a multipleOf check would refuse it.
    for (const price of [1234567.89, 0.07, '0.29', 9_999_999_999_999.99, '9999999999999.99']) {
      const response = await submit(propertyBody({ price }))
      assert.equal(response.statusCode, 201, response.body)
      assert.equal(response.json<Property>().price, Number(price))
    }
  })

  const rejectedBodies: [string, Record<string, unknown>, (string | number)[]][] = [
    ['no property_type', { property_type: undefined }, ['body', 'property_type']],
    ['no deal_type', { deal_type: undefined }, ['body', 'deal_type']],
    ['an unknown field', { status_id: 2 }, ['body', 'status_id']],
    ['a tenant_id', { tenant_id: 1 }, ['body', 'tenant_id']],
    ['a negative price', { price: -5 }, ['body', 'price']],
    ['a price that is not a number', { price: 'дорого' }, ['body', 'price']],
    ['a price finer than a kopeck', { price: 0.001 }, ['body', 'price']],
    ['a price finer than a kopeck, as a string', { price: '8500000.555' }, ['body', 'price']],
    ['an owner without phone', { owner: { name: 'Иван' } }, ['body', 'owner', 'phone']],
    ['an owner without name', { owner: { phone: '89123456789' } }, ['body', 'owner', 'name']],
    ['an owner whose name is blank', { owner: { name: '   ', phone: '89123456789' } }, ['body', 'owner', 'name']],
    ['an owner whose name is a zero-width space', { owner: { name: '\u200b ', phone: '89123456789' } }, ['body', 'owner', 'name']],
    ['an unparseable owner phone', { owner: { name: 'Иван', phone: '12345' } }, ['body', 'owner', 'phone']],
    ['an unknown owner field', { owner: { name: 'Иван', phone: '89123456789', email: 'x@y.z' } }, ['body', 'owner', 'email']],
    ['a location without city_id', { location: { address: 'Где-то' } }, ['body', 'location', 'city_id']],
    ['an unknown city', { location: { city_id: 99999 } }, ['body', 'location', 'city_id']],
    ['a district of another city', { location: { city_id: 2, district_id: 1 } }, ['body', 'location', 'district_id']],
    ['a complex of another city', { location: { city_id: 2, residential_complex_id: 1 } }, ['body', 'location', 'residential_complex_id']],
    // Алые Паруса lies in the Северо-Западный округ (9), not in the Центральный (1).
    ['a complex of another district', { location: { city_id: 1, district_id: 1, residential_complex_id: 4 } }, ['body', 'location', 'residential_complex_id']],
    ['a latitude out of range', { location: { city_id: 1, latitude: 91 } }, ['body', 'location', 'latitude']],
    // One coordinate would place the listing on no map: no box or radius could find it.
    ['a latitude without a longitude', { location: { city_id: 1, latitude: 55.75 } }, ['body', 'location', 'longitude']],
    ['a longitude without a latitude', { location: { city_id: 1, latitude: null, longitude: '37.6' } }, ['body', 'location', 'latitude']],
    ['an unknown attribute', { attributes: { sauna: 'true' } }, ['body', 'attributes', 'sauna']],
    ['a number attribute that is not a number', { attributes: { area: 'много' } }, ['body', 'attributes', 'area']],
    ['a number with a decimal comma', { attributes: { area: '54,5' } }, ['body', 'attributes', 'area']],
    ['an area finer than the hundredth', { attributes: { area: '54.555' } }, ['body', 'attributes', 'area']],
    // Judged as written, not after rounding to a double: these are 55 and the maximum once rounded.
    ['an area finer than the hundredth in many digits', { attributes: { area: '54.999999999999999999' } }, ['body', 'attributes', 'area']],
    ['a decimal above the maximum by a fraction', { attributes: { ceiling_height: '1000000000.0000000000000001' } }, ['body', 'attributes', 'ceiling_height']],
    ['a kitchen area finer than the hundredth, as a number', { attributes: { kitchen_area: 10.125 } }, ['body', 'attributes', 'kitchen_area']],
    ['a land area finer than a hundredth of a m²', { property_type: 'Земля', attributes: { area_land: '6.12345' } }, ['body', 'attributes', 'area_land']],
    ['an integer attribute with a fraction', { attributes: { rooms: '2.5' } }, ['body', 'attributes', 'rooms']],
    ['a negative integer attribute', { attributes: { rooms: '-1' } }, ['body', 'attributes', 'rooms']],
    ['a bool attribute that is not true/false', { attributes: { elevator: 'да' } }, ['body', 'attributes', 'elevator']],
    ['an empty attribute value', { attributes: { area: '' } }, ['body', 'attributes', 'area']],
    ['attributes that are not an object', { attributes: ['area'] }, ['body', 'attributes']],
  ]
  for (const [name, overrides, loc] of rejectedBodies) {
    it(`answers 422 naming ${loc.slice(1).join('.')} for ${name}, storing nothing`, async () => {
      const before = await t.db.$count(properties)
      // Spread rather than passed to propertyBody: these fields are meant to break the schema.
      const body: Record<string, unknown> = { ...propertyBody(), ...overrides }
      for (const [key, value] of Object.entries(overrides)) if (value === undefined) delete body[key]
      const response = await submit(body)
      assert.equal(response.statusCode, 422, response.body)
      const problem = response.json<ValidationErrorBody>()
      assert.ok(
        problem.errors.some((error) => JSON.stringify(error.loc) === JSON.stringify(loc)),
        `expected an error at ${loc.join('.')}: ${response.body}`,
      )
      assert.match(problem.detail, /^Invalid /)
      assert.equal(await t.db.$count(properties), before)
    })
  }

  it('reports every problem at once', async () => {
    const response = await submit(
      propertyBody({ owner: { name: 'Иван', phone: '1' }, location: { city_id: 2, district_id: 1 }, attributes: { rooms: 'два', sauna: '1' } }),
    )
    assert.equal(response.statusCode, 422)
    const locs = response.json<ValidationErrorBody>().errors.map((error) => error.loc.join('.'))
    assert.deepEqual(locs.sort(), ['body.attributes.rooms', 'body.attributes.sauna', 'body.location.district_id', 'body.owner.phone'])
  })

  const misspelledTypes = ['квартира', 'КВАРТИРА', 'Квартиры', 'Kvartira', 'Таунхаус ', 'Комерция', 'земля']
  for (const value of misspelledTypes) {
    it(`rejects the property_type ${JSON.stringify(value)} and lists the allowed values`, async () => {
      const response = await submit({ ...propertyBody(), property_type: value })
      assert.equal(response.statusCode, 422)
      const error = response.json<ValidationErrorBody>().errors[0]
      assert.deepEqual(error?.loc, ['body', 'property_type'])
      assert.equal(error?.msg, 'must be one of: "Квартира", "Дом", "Таунхаус", "Коммерция", "Земля"')
    })
  }

  for (const value of ['продажа', 'Долгосрочная Аренда', 'Долгосрочная  аренда', 'Посуточная', 'Аренда']) {
    it(`rejects the deal_type ${JSON.stringify(value)}`, async () => {
      const response = await submit({ ...propertyBody(), deal_type: value })
      assert.equal(response.statusCode, 422)
      const error = response.json<ValidationErrorBody>().errors[0]
      assert.deepEqual(error?.loc, ['body', 'deal_type'])
      assert.match(error.msg, /"Долгосрочная аренда"/)
    })
  }

  // Every enumerated attribute: its first value misspelled the usual ways is refused, the exact value accepted.
  for (const attribute of attributeCatalogue.filter((entry) => entry.type === 'enum')) {
    const exact = attribute.allowedValues![0]!
    const misspellings = new Set([exact.toLowerCase(), exact.toUpperCase(), exact.replace(/ё/g, 'е'), `${exact} `].filter((v) => v !== exact))
    it(`checks ${attribute.name} against its exact values`, async () => {
      for (const value of misspellings) {
        const response = await submit(propertyBody({ attributes: { [attribute.name]: value } }))
        assert.equal(response.statusCode, 422, `${attribute.name}=${value}`)
        const error = response.json<ValidationErrorBody>().errors[0]
        assert.deepEqual(error?.loc, ['body', 'attributes', attribute.name])
        assert.equal(error?.msg, `must be one of: ${attribute.allowedValues!.map((v) => `"${v}"`).join(', ')}`)
      }
      const accepted = await submit(propertyBody({ attributes: { [attribute.name]: exact } }))
      assert.equal(accepted.statusCode, 201, accepted.body)
      assert.equal(accepted.json<Property>().attributes[attribute.name], exact)
    })
  }

  it('stores every attribute type typed', async () => {
    const attributes: Record<string, string> = {}
    for (const attribute of attributeCatalogue) {
      attributes[attribute.name] =
        attribute.type === 'enum' ? attribute.allowedValues!.at(-1)! : attribute.type === 'bool' ? 'true' : attribute.type === 'integer' ? '3' : '12.5'
    }
    const response = await submit(propertyBody({ attributes }))
    assert.equal(response.statusCode, 201, response.body)
    const stored = response.json<Property>().attributes
    assert.equal(Object.keys(stored).length, attributeCatalogue.length)
    assert.equal(stored.rooms, 3)
    assert.equal(stored.area, 12.5)
    assert.equal(stored.elevator, true)
    assert.equal(stored.ownership_type, 'Государственная')
  })

  it('keeps a land area in sotkas to a hundredth of a m², as the other areas: four decimals', async () => {
    const response = await submit(propertyBody({ property_type: 'Земля', attributes: { area_land: '6.125' } }))
    assert.equal(response.statusCode, 201, response.body)
    assert.equal(response.json<Property>().attributes.area_land, 6.125)
    const finer = await submit(propertyBody({ property_type: 'Земля', attributes: { area_land: '6.12345' } }))
    assert.deepEqual(finer.json<ValidationErrorBody>().errors, [{ loc: ['body', 'attributes', 'area_land'], msg: 'must have at most 4 decimal places' }])
  })

  it('answers a well-written number too long to be finite with its bound, not as malformed', async () => {
    const huge = `1${'0'.repeat(400)}`
    for (const [name, value, msg] of [
      ['rooms', huge, 'must be from 0 to 1000000'],
      ['area', `${huge}.5`, 'must be from 0 to 1000000000'],
    ]) {
      const response = await submit(propertyBody({ attributes: { [name!]: value! } }))
      assert.equal(response.statusCode, 422, response.body)
      assert.deepEqual(response.json<ValidationErrorBody>().errors, [{ loc: ['body', 'attributes', name], msg }], name)
    }
  })

  it('refuses a number written with more digits than a stored number keeps, rather than store another', async () => {
    for (const value of ['2.99999999999999999999', '2.1234567890123456']) {
      const response = await submit(propertyBody({ attributes: { ceiling_height: value } }))
      assert.equal(response.statusCode, 422, response.body)
      assert.deepEqual(response.json<ValidationErrorBody>().errors, [
        { loc: ['body', 'attributes', 'ceiling_height'], msg: 'must have at most 15 significant digits, as it would otherwise be stored as another number' },
      ])
    }
    const kept = await submit(propertyBody({ attributes: { ceiling_height: '2.12345678901234', area: '0054.50' } }))
    assert.equal(kept.statusCode, 201, kept.body)
    assert.equal(kept.json<Property>().attributes.ceiling_height, 2.12345678901234)
  })

  it('answers 401 without a valid key and stores nothing', async () => {
    const before = await t.db.$count(properties)
    for (const headers of [{}, { 'x-api-key': 'mls_live_wrong' }] as Record<string, string>[]) {
      const response = await submit(propertyBody(), headers)
      assert.equal(response.statusCode, 401)
      assert.deepEqual(response.json<ErrorBody>(), { detail: 'Invalid or missing API key' })
    }
    assert.equal(await t.db.$count(properties), before)
  })

  // Coordinates written as strings, and attributes removed by name.
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'PUT', url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: agency.headers, ...(payload === undefined ? {} : { payload: payload as object }) })

  const hasErrorAt = (body: ValidationErrorBody, loc: string[]) => body.errors.some((error) => JSON.stringify(error.loc) === JSON.stringify(loc))

  // A coordinate is accepted "as a JSON number or a numeric string" (docs/api.md, Input), within
  // -90..90 / -180..180 either way: one stored out of range would fail every answer showing it.
  const outOfRange: [string, { latitude: string; longitude: string }, string][] = [
    ['a latitude of "91"', { latitude: '91', longitude: '37.6' }, 'latitude'],
    ['a latitude of "-100"', { latitude: '-100', longitude: '37.6' }, 'latitude'],
    ['a longitude of "181"', { latitude: '55.75', longitude: '181' }, 'longitude'],
    ['a latitude of "1000"', { latitude: '1000', longitude: '37.6' }, 'latitude'],
  ]
  for (const [name, coordinates, field] of outOfRange) {
    it(`POST /properties answers 422 naming location.${field} for ${name} sent as a string, storing nothing`, async () => {
      const before = await t.db.$count(properties)
      const response = await call('POST', '/properties', { ...propertyBody(), location: { city_id: 1, ...coordinates } })
      assert.equal(response.statusCode, 422, response.body)
      assert.ok(hasErrorAt(response.json<ValidationErrorBody>(), ['body', 'location', field]), response.body)
      assert.equal(await t.db.$count(properties), before, 'nothing is stored')
    })
  }

  it('PATCH /properties/{id} answers 422 for a latitude out of range sent as a string, and the listing stays readable and unchanged', async () => {
    const { id } = await submitProperty(t.app, agency)
    const response = await call('PATCH', `/properties/${id}`, { location: { city_id: 1, latitude: '-91', longitude: '37.6' } })
    assert.equal(response.statusCode, 422, response.body)
    assert.ok(hasErrorAt(response.json<ValidationErrorBody>(), ['body', 'location', 'latitude']), response.body)
    const read = await call('GET', `/properties/${id}`)
    assert.equal(read.statusCode, 200, read.body)
    assert.equal(read.json<Property>().location?.latitude ?? null, null)
  })

  it('PUT /properties/by-external-id answers 422 for a longitude out of range sent as a string, creating nothing', async () => {
    const response = await call('PUT', '/properties/by-external-id/REVIEW-LON', {
      ...propertyBody(),
      location: { city_id: 1, latitude: '55.75', longitude: '200' },
    })
    assert.equal(response.statusCode, 422, response.body)
    assert.ok(hasErrorAt(response.json<ValidationErrorBody>(), ['body', 'location', 'longitude']), response.body)
    assert.equal((await call('GET', '/properties/by-external-id/REVIEW-LON')).statusCode, 404)
  })

  it('PATCH /properties/{id} refuses an unknown attribute name with 422 naming it, also when its value is null', async () => {
    // docs/api.md: "An unknown name, a wrong type or a value outside the list is a 422 naming the
    // attribute"; a typo in a name to remove ("furnture": null) too, or the attribute meant stays.
    const { id } = await submitProperty(t.app, agency, { attributes: { area: '54.5', furniture: 'Полная' } })
    const response = await call('PATCH', `/properties/${id}`, { attributes: { furnture: null } })
    assert.equal(response.statusCode, 422, response.body)
    assert.ok(hasErrorAt(response.json<ValidationErrorBody>(), ['body', 'attributes', 'furnture']), response.body)
  })
})

describe('POST /properties with Idempotency-Key', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app)
  })
  after(() => t.close())

  const submit = (key: string, payload: object, tenant: Tenant = agency) =>
    t.app.inject({ method: 'POST', url: '/properties', headers: { ...tenant.headers, 'idempotency-key': key }, payload })

  it('replays the first response for the same key and body', async () => {
    const body = propertyBody()
    const first = await submit('order-1', body)
    assert.equal(first.statusCode, 201)
    const again = await submit('order-1', body)
    assert.equal(again.statusCode, 201)
    assert.equal(again.headers['idempotent-replayed'], 'true')
    assert.deepEqual(again.json<Property>(), first.json<Property>())
    assert.equal(await t.db.$count(properties, eq(properties.tenantId, agency.tenantId)), 1)
  })

  it('refuses the same key with another body with 422', async () => {
    assert.equal((await submit('order-2', propertyBody({ price: 1000000 }))).statusCode, 201)
    const response = await submit('order-2', propertyBody({ price: 2000000 }))
    assert.equal(response.statusCode, 422)
    assert.match(response.json<ErrorBody>().detail, /Idempotency-Key was already used with a different request body/)
  })

  it('does not keep a key whose request failed validation', async () => {
    assert.equal((await submit('order-3', propertyBody({ price: -1 }))).statusCode, 422)
    assert.equal((await submit('order-3', propertyBody())).statusCode, 201)
  })

  it('creates one property for two concurrent requests with one key', async () => {
    const body = propertyBody()
    const before = await t.db.$count(properties)
    const responses = await Promise.all([submit('order-4', body), submit('order-4', body)])
    const statuses = responses.map((response) => response.statusCode).sort()
    assert.ok(['201,201', '201,409'].includes(statuses.join(',')), statuses.join(','))
    const ids = new Set(responses.filter((r) => r.statusCode === 201).map((r) => r.json<Property>().id))
    assert.equal(ids.size, 1)
    assert.equal(await t.db.$count(properties), before + 1)
  })

  it('keeps keys apart per tenant', async () => {
    const other = await createTenant(t.app, { email: 'other@agency.example' })
    const mine = await submit('shared-key', propertyBody())
    const theirs = await submit('shared-key', propertyBody({ price: 1 }), other)
    assert.equal(theirs.statusCode, 201)
    assert.notEqual(theirs.json<Property>().id, mine.json<Property>().id)
  })
})
