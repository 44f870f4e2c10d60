import { and, asc, eq } from 'drizzle-orm'
import type { Database } from '../../db/client.js'
import { cities, dealTypes, districts, propertyStatuses, propertyTypes, residentialComplexes } from '../../db/schema.js'

export function listPropertyTypes(db: Database) {
  return db.select().from(propertyTypes).orderBy(asc(propertyTypes.id))
}

export function listDealTypes(db: Database) {
  return db.select().from(dealTypes).orderBy(asc(dealTypes.id))
}

export function listPropertyStatuses(db: Database) {
  return db.select().from(propertyStatuses).orderBy(asc(propertyStatuses.id))
}

const cityColumns = {
  id: cities.id,
  name: cities.name,
  country: cities.country,
  region: cities.region,
  latitude: cities.latitude,
  longitude: cities.longitude,
}

export function listCities(db: Database, country?: string) {
  return db
    .select(cityColumns)
    .from(cities)
    .where(country ? eq(cities.country, country) : undefined)
    .orderBy(asc(cities.id))
}

export async function findCity(db: Database, cityId: number) {
  const [row] = await db.select(cityColumns).from(cities).where(eq(cities.id, cityId))
  return row
}

const districtColumns = { id: districts.id, city_id: districts.cityId, name: districts.name }

export function listDistricts(db: Database, cityId?: number) {
  return db
    .select(districtColumns)
    .from(districts)
    .where(cityId ? eq(districts.cityId, cityId) : undefined)
    .orderBy(asc(districts.id))
}

export async function findDistrict(db: Database, districtId: number) {
  const [row] = await db.select(districtColumns).from(districts).where(eq(districts.id, districtId))
  return row
}

export async function findDistrictInCity(db: Database, districtId: number, cityId: number) {
  const [row] = await db
    .select(districtColumns)
    .from(districts)
    .where(and(eq(districts.id, districtId), eq(districts.cityId, cityId)))
  return row
}

const complexColumns = {
  id: residentialComplexes.id,
  city_id: residentialComplexes.cityId,
  district_id: residentialComplexes.districtId,
  name: residentialComplexes.name,
}

export function listResidentialComplexes(db: Database, cityId?: number) {
  return db
    .select(complexColumns)
    .from(residentialComplexes)
    .where(cityId ? eq(residentialComplexes.cityId, cityId) : undefined)
    .orderBy(asc(residentialComplexes.id))
}

export async function findResidentialComplex(db: Database, complexId: number) {
  const [row] = await db.select(complexColumns).from(residentialComplexes).where(eq(residentialComplexes.id, complexId))
  return row
}

export async function insertCity(db: Database, values: typeof cities.$inferInsert) {
  // Only a place of the same name is "already there"; any other conflict is an error of its own.
  const [row] = await db
    .insert(cities)
    .values(values)
    .onConflictDoNothing({ target: [cities.country, cities.region, cities.name] })
    .returning(cityColumns)
  return row
}

export async function insertDistrict(db: Database, values: typeof districts.$inferInsert) {
  const [row] = await db
    .insert(districts)
    .values(values)
    .onConflictDoNothing({ target: [districts.cityId, districts.name] })
    .returning(districtColumns)
  return row
}

export async function insertResidentialComplex(db: Database, values: typeof residentialComplexes.$inferInsert) {
  const [row] = await db
    .insert(residentialComplexes)
    .values(values)
    .onConflictDoNothing({ target: [residentialComplexes.cityId, residentialComplexes.name] })
    .returning(complexColumns)
  return row
}
