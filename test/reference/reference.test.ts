import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { cities } from '../../src/db/schema.js'
import { attributeCatalogue } from '../../src/modules/reference/attribute-catalogue.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders } from '../helpers/factories.js'
import type { OpenApiDocument } from '../helpers/openapi.js'
import type { Attribute, City, District, ErrorBody, NamedItem, PropertyStatus, ResidentialComplex, ValidationErrorBody } from '../helpers/responses.js'

describe('public reference data', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  const get = (url: string) => t.app.inject({ method: 'GET', url })

  it('serves the dictionaries with their fixed ids, cacheable', async () => {
    const types = await get('/property-types')
    assert.equal(types.statusCode, 200)
    assert.deepEqual(types.json<NamedItem[]>(), [
      { id: 1, name: 'Квартира' },
      { id: 2, name: 'Дом' },
      { id: 3, name: 'Таунхаус' },
      { id: 4, name: 'Коммерция' },
      { id: 5, name: 'Земля' },
    ])
    assert.match(types.headers['cache-control'] as string, /^public, max-age=\d+$/)
    assert.deepEqual((await get('/deal-types')).json<NamedItem[]>(), [
      { id: 1, name: 'Продажа' },
      { id: 2, name: 'Долгосрочная аренда' },
      { id: 3, name: 'Посуточная аренда' },
    ])
    assert.deepEqual((await get('/property-statuses')).json<PropertyStatus[]>(), [
      { id: 1, code: 'pending_review', name: 'На проверке' },
      { id: 2, code: 'published', name: 'Опубликовано' },
      { id: 3, code: 'rejected', name: 'Отклонено' },
      { id: 4, code: 'withdrawn', name: 'Снято с публикации' },
      { id: 5, code: 'closed', name: 'Сделка закрыта' },
    ])
  })

  it('ships the 15 largest Russian cities, Almaty and Astana', async () => {
    const list = (await get('/cities')).json<City[]>()
    const russian = list.filter((city) => city.country === 'RU').map((city) => city.name)
    for (const name of [
      'Москва',
      'Санкт-Петербург',
      'Новосибирск',
      'Екатеринбург',
      'Казань',
      'Красноярск',
      'Нижний Новгород',
      'Челябинск',
      'Уфа',
      'Самара',
      'Ростов-на-Дону',
      'Краснодар',
      'Омск',
      'Воронеж',
      'Пермь',
    ]) {
      assert.ok(russian.includes(name), name)
    }
    assert.deepEqual(
      (await get('/cities?country=KZ')).json<City[]>().map((city) => city.name),
      ['Алматы', 'Астана'],
    )
    assert.deepEqual(list[0], { id: 1, name: 'Москва', country: 'RU', region: 'Москва', latitude: 55.7558, longitude: 37.6176 })
  })

  it('ships real districts for at least five cities and lists them by city', async () => {
    const all = (await get('/districts')).json<District[]>()
    const citiesWithDistricts = new Set(all.map((district) => district.city_id))
    assert.ok(citiesWithDistricts.size >= 5)
    const spb = (await get('/districts?city_id=2')).json<District[]>()
    assert.equal(spb.length, 18)
    assert.ok(spb.every((district) => district.city_id === 2))
    assert.ok(spb.some((district) => district.name === 'Адмиралтейский'))
    assert.deepEqual((await get('/districts?city_id=999999')).json<District[]>(), [])
  })

  it('ships residential complexes whose district lies in their city', async () => {
    const complexes = (await get('/residential-complexes')).json<ResidentialComplex[]>()
    assert.ok(complexes.length >= 5)
    const districts = (await get('/districts')).json<District[]>()
    for (const complex of complexes) {
      if (complex.district_id === null) continue
      assert.equal(districts.find((district) => district.id === complex.district_id)?.city_id, complex.city_id)
    }
    const moscow = (await get('/residential-complexes?city_id=1')).json<ResidentialComplex[]>()
    assert.ok(moscow.some((complex) => complex.name === 'ЗИЛАРТ'))
  })

  it('reads one place by id, 404 when unknown, 422 when the id is not a positive integer', async () => {
    assert.equal((await get('/cities/17')).json<City>().name, 'Алматы')
    assert.equal((await get('/districts/1')).json<District>().city_id, 1)
    assert.equal((await get('/residential-complexes/1')).statusCode, 200)
    for (const [url, detail] of [
      ['/cities/999999', 'City not found'],
      ['/cities/0', 'City not found'],
      ['/districts/2147483648', 'District not found'],
      ['/residential-complexes/-1', 'Residential complex not found'],
    ] as const) {
      const missing = await get(url)
      assert.deepEqual([missing.statusCode, missing.json<ErrorBody>()], [404, { detail }], url)
    }
    for (const url of ['/cities/abc', '/districts/1.5', '/districts?city_id=x', '/cities?country=ru']) {
      const response = await get(url)
      assert.equal(response.statusCode, 422, url)
      assert.ok(Array.isArray(response.json<ValidationErrorBody>().errors))
    }
  })

  it('publishes the attribute catalogue with exact values', async () => {
    const response = await get('/attributes')
    assert.equal(response.statusCode, 200)
    const list = response.json<Attribute[]>()
    assert.equal(list.length, attributeCatalogue.length)
    assert.equal(list.length, 63)
    const byName = new Map(list.map((attribute) => [attribute.name, attribute]))
    assert.deepEqual(byName.get('rooms'), {
      name: 'rooms',
      type: 'integer',
      allowed_values: null,
      meaning: 'number of rooms',
      min: 0,
      max: 1_000_000,
      decimals: null,
      property_types: ['Квартира', 'Дом', 'Таунхаус', 'Коммерция'],
    })
    // What a form checks before sending, as the submission checks it.
    assert.deepEqual(
      ['floor', 'area', 'area_land', 'ceiling_height', 'elevator', 'bathroom'].map((name) => {
        const { min, max, decimals } = byName.get(name)!
        return [name, min, max, decimals]
      }),
      [
        ['floor', -10, 1_000_000, null],
        ['area', 0, 1_000_000_000, 2],
        ['area_land', 0, 1_000_000_000, 4],
        ['ceiling_height', 0, 1_000_000_000, null],
        ['elevator', null, null, null],
        ['bathroom', null, null, null],
      ],
    )
    assert.deepEqual(byName.get('land_category')?.property_types, ['Дом', 'Таунхаус', 'Коммерция', 'Земля'])
    assert.equal(byName.get('area')?.type, 'number')
    assert.equal(byName.get('elevator')?.type, 'bool')
    assert.deepEqual(byName.get('bathroom')?.allowed_values, ['Совмещённый', 'Раздельный'])
    assert.deepEqual(byName.get('internet')?.allowed_values, ['Нет', 'Проводной', 'Оптика', 'DSL', 'Мобильный (4G/5G)'])
    assert.deepEqual(byName.get('ownership_type')?.allowed_values, ['Частная собственность', 'Долевая собственность', 'Государственная'])
    assert.deepEqual(byName.get('water')?.allowed_values, ['Центральное', 'Скважина/колодец', 'Нет'])
  })
})

describe('admin: adding places', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  const post = (url: string, payload: object, headers: Record<string, string> = adminHeaders) => t.app.inject({ method: 'POST', url, payload, headers })

  it('adds a city, a district in it and a complex in that district', async () => {
    const city = await post('/admin/cities', { name: 'Тюмень', country: 'RU', region: 'Тюменская область', latitude: 57.153, longitude: 65.5343 })
    assert.equal(city.statusCode, 201, city.body)
    const cityId = city.json<City>().id
    assert.ok(cityId > 18, 'new ids come after the shipped ones')
    assert.equal(city.headers.location, `/cities/${cityId}`)
    assert.equal((await t.app.inject({ method: 'GET', url: `/cities/${cityId}` })).json<City>().name, 'Тюмень')

    const district = await post('/admin/districts', { city_id: cityId, name: 'Центральный' })
    assert.equal(district.statusCode, 201)
    assert.deepEqual(district.json<District>(), { id: district.json<District>().id, city_id: cityId, name: 'Центральный' })

    const complex = await post('/admin/residential-complexes', { city_id: cityId, district_id: district.json<District>().id, name: 'Акватория' })
    assert.equal(complex.statusCode, 201)
    assert.equal(complex.json<ResidentialComplex>().district_id, district.json<District>().id)

    const list = (await t.app.inject({ method: 'GET', url: `/residential-complexes?city_id=${cityId}` })).json<ResidentialComplex[]>()
    assert.equal(list.length, 1)
  })

  it('refuses duplicates with 409', async () => {
    const moscow = await post('/admin/cities', { name: 'Москва', country: 'RU', region: 'Москва' })
    assert.equal(moscow.statusCode, 409)
    assert.equal((await post('/admin/districts', { city_id: 2, name: 'Адмиралтейский' })).statusCode, 409)
    assert.equal((await post('/admin/residential-complexes', { city_id: 1, name: 'ЗИЛАРТ' })).statusCode, 409)
    // Blanks and invisible characters at either end make no other name.
    assert.equal((await post('/admin/cities', { name: ' Москва ', country: 'RU', region: 'Москва\u00a0' })).statusCode, 409)
    assert.equal((await post('/admin/districts', { city_id: 2, name: 'Адмиралтейский ' })).statusCode, 409)
    assert.equal((await post('/admin/residential-complexes', { city_id: 1, name: '\u200bЗИЛАРТ' })).statusCode, 409)
  })

  it('refuses places that do not hang together with 422, storing nothing', async () => {
    const before = await t.db.$count(cities)
    const cases: [string, object, string[]][] = [
      ['/admin/cities', { name: 'X', country: 'XX' }, ['body', 'country']],
      ['/admin/cities', { name: 'X', country: 'RU', latitude: 91 }, ['body', 'latitude']],
      ['/admin/cities', { name: 'X', country: 'RU', id: 5 }, ['body', 'id']],
      ['/admin/districts', { city_id: 999999, name: 'X' }, ['body', 'city_id']],
      ['/admin/districts', { city_id: 1 }, ['body', 'name']],
      ['/admin/cities', { name: '   ', country: 'RU' }, ['body', 'name']],
      ['/admin/cities', { name: 'Тверь\nЦентр', country: 'RU' }, ['body', 'name']],
      ['/admin/cities', { name: 'Полукоординатск', country: 'RU', latitude: 56.8 }, ['body', 'longitude']],
      ['/admin/districts', { city_id: 1, name: '\u200b' }, ['body', 'name']],
      ['/admin/residential-complexes', { city_id: 1, name: ' ' }, ['body', 'name']],
      // District 1 is in Moscow, not in Saint Petersburg.
      ['/admin/residential-complexes', { city_id: 2, district_id: 1, name: 'X' }, ['body', 'district_id']],
    ]
    for (const [url, payload, loc] of cases) {
      const response = await post(url, payload)
      assert.equal(response.statusCode, 422, `${url} ${JSON.stringify(payload)}: ${response.body}`)
      assert.deepEqual(response.json<ValidationErrorBody>().errors[0]?.loc, loc)
    }
    assert.equal(await t.db.$count(cities), before)
  })
})

describe('admin: the document’s examples of places', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())
  const post = (url: string, payload: object) => t.app.inject({ method: 'POST', url, payload, headers: adminHeaders })

  it('accepts the examples its document gives, on a fresh installation: none names a shipped place', async () => {
    const document = (await t.app.inject({ url: '/admin/openapi.json', headers: adminHeaders })).json<OpenApiDocument>()
    for (const path of ['/admin/cities', '/admin/districts', '/admin/residential-complexes']) {
      const media = document.paths[path]!.post!.requestBody!.content['application/json']!
      const schema = media.schema.$ref ? document.components.schemas[media.schema.$ref.split('/').pop()!]! : media.schema
      const example = (media.example ?? schema.examples?.[0]) as object | undefined
      assert.ok(example, `${path} has an example`)
      const added = await post(path, example)
      assert.equal(added.statusCode, 201, `${path} ${JSON.stringify(example)}: ${added.body}`)
    }
  })
})
