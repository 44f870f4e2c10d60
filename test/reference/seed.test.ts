import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { cities, districts } from '../../src/db/schema.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { seedCities, seedDistricts, seedResidentialComplexes } from '../../src/db/seed/places.js'
import pg from 'pg'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { engine, freshDatabase, type FreshDatabase } from '../helpers/database.js'
import { adminHeaders } from '../helpers/factories.js'
import type { City } from '../helpers/responses.js'

describe('shipped reference data', () => {
  let database: FreshDatabase
  before(async () => {
    database = await freshDatabase()
  })
  after(() => database.drop())

  it('is consistent: unique ids, districts of complexes in the complex’s city', () => {
    for (const list of [seedCities, seedDistricts, seedResidentialComplexes]) {
      assert.equal(new Set(list.map((row) => row.id)).size, list.length)
    }
    for (const complex of seedResidentialComplexes) {
      if (complex.district_id === null) continue
      assert.equal(seedDistricts.find((district) => district.id === complex.district_id)?.city_id, complex.city_id)
    }
  })

  it('is applied again on every start without duplicating or overwriting rows', async () => {
    const db = database.handle.db
    const [citiesBefore, districtsBefore] = [await db.$count(cities), await db.$count(districts)]
    assert.equal(citiesBefore, seedCities.length)
    await db.insert(cities).values({ name: 'Тюмень', country: 'RU' })
    await migrateDatabase(database.handle)
    await migrateDatabase(database.handle)
    assert.equal(await db.$count(cities), citiesBefore + 1)
    assert.equal(await db.$count(districts), districtsBefore)
  })
})

describe('shipped reference data applied while an operator adds a place', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  it(
    'leaves the ids of places being added alone: the next new city is a 201, not a clash with one added meanwhile',
    { skip: engine === 'pglite' && 'PGlite runs one transaction at a time' },
    async () => {
      // An operator's POST /admin/cities in flight in a running process (its row inserted, not
      // committed yet) while another process starts and applies the shipped data.
      const other = new pg.Client({ connectionString: t.database.url })
      await other.connect()
      try {
        await other.query('begin')
        await other.query(`insert into cities (name, country, region) values ('Тобольск', 'RU', 'Тюменская область')`)
        await migrateDatabase(t.database.handle)
        await other.query('commit')
      } finally {
        await other.end()
      }
      const added = await t.app.inject({
        method: 'POST',
        url: '/admin/cities',
        headers: adminHeaders,
        payload: { name: 'Тюмень', country: 'RU', region: 'Тюменская область' },
      })
      assert.equal(added.statusCode, 201, added.body)
      assert.equal(added.json<City>().name, 'Тюмень')
    },
  )
})
