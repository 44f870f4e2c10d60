import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { cities, districts } from '../../src/db/schema.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { seedCities, seedDistricts, seedResidentialComplexes } from '../../src/db/seed/places.js'
import { freshDatabase, type FreshDatabase } from '../helpers/database.js'

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
