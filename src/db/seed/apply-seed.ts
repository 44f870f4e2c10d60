import { sql } from 'drizzle-orm'
import type { Database } from '../client.js'
import { cities, dealTypes, districts, propertyStatuses, propertyTypes, residentialComplexes } from '../schema.js'
import { seedDealTypes, seedPropertyStatuses, seedPropertyTypes } from './dictionaries.js'
import { seedCities, seedDistricts, seedResidentialComplexes } from './places.js'

/**
 * Inserts the shipped reference data that is missing and leaves everything else alone, so it
 * is safe on every start: rows an admin added (or a shipped row an admin already created
 * under another id) are never overwritten. Runs inside the migration lock.
 */
export async function applySeed(db: Database): Promise<void> {
  await db.transaction(async (tx) => {
    await tx
      .insert(propertyTypes)
      .values([...seedPropertyTypes])
      .onConflictDoNothing()
    await tx
      .insert(dealTypes)
      .values([...seedDealTypes])
      .onConflictDoNothing()
    await tx
      .insert(propertyStatuses)
      .values([...seedPropertyStatuses])
      .onConflictDoNothing()

    await tx
      .insert(cities)
      .values(seedCities.map((c) => ({ ...c })))
      .onConflictDoNothing()
    await tx
      .insert(districts)
      .values(seedDistricts.map((d) => ({ id: d.id, cityId: d.city_id, name: d.name })))
      .onConflictDoNothing()
    await tx
      .insert(residentialComplexes)
      .values(seedResidentialComplexes.map((c) => ({ id: c.id, cityId: c.city_id, districtId: c.district_id, name: c.name })))
      .onConflictDoNothing()

    // Rows were inserted with explicit ids: move each identity past them so the next
    // admin-added place does not collide with a shipped one. Forward only: a place an operator
    // is adding in another process, not committed yet, has taken an id this cannot see.
    for (const table of ['cities', 'districts', 'residential_complexes']) {
      await tx.execute(
        sql.raw(`select setval(seq, greatest((select max(id) from ${table}), coalesce(pg_sequence_last_value(seq), 0), 1))
                 from (select pg_get_serial_sequence('${table}', 'id')::regclass as seq) identity`),
      )
    }
  })
}
