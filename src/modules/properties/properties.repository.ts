import { and, count, desc, eq, ne, or, sql, type SQL } from 'drizzle-orm'
import { queryRows, type Database } from '../../db/client.js'
import type { OwnerView } from './properties.mapper.js'
import { idempotencyKeys, owners, properties, type NewPropertyColumns, type PropertyRow } from '../../db/schema.js'

export type { PropertyRow } from '../../db/schema.js'
export type NewProperty = NewPropertyColumns

/** A property of one tenant with its owner; another tenant's id finds nothing. */
export async function findPropertyWithOwner(
  db: Database,
  tenantId: number,
  id: number,
): Promise<{ property: PropertyRow; owner: OwnerView | null } | undefined> {
  const [row] = await db
    .select({ property: properties, owner: { id: owners.id, name: owners.name, phone: owners.phone, notes: owners.notes } })
    .from(properties)
    .leftJoin(owners, eq(owners.id, properties.ownerId))
    .where(and(eq(properties.tenantId, tenantId), eq(properties.id, id)))
  return row
}

/** Locks one property of one tenant for a change. */
export async function lockProperty(db: Database, tenantId: number, id: number): Promise<PropertyRow | undefined> {
  const [row] = await db
    .select()
    .from(properties)
    .where(and(eq(properties.tenantId, tenantId), eq(properties.id, id)))
    .for('update')
  return row
}

export async function insertProperty(db: Database, values: NewProperty): Promise<PropertyRow> {
  const [row] = await db.insert(properties).values(values).returning()
  return row!
}

export async function updateProperty(db: Database, id: number, values: Partial<NewProperty>): Promise<PropertyRow> {
  const [row] = await db
    .update(properties)
    .set({ ...values, updatedAt: sql`now()` })
    .where(eq(properties.id, id))
    .returning()
  return row!
}

export async function findOwner(db: Database, ownerId: number): Promise<OwnerView | undefined> {
  const [row] = await db.select({ id: owners.id, name: owners.name, phone: owners.phone, notes: owners.notes }).from(owners).where(eq(owners.id, ownerId))
  return row
}

export async function deleteProperty(db: Database, tenantId: number, id: number): Promise<boolean> {
  const deleted = await db
    .delete(properties)
    .where(and(eq(properties.tenantId, tenantId), eq(properties.id, id)))
    .returning({ id: properties.id })
  return deleted.length > 0
}

/**
 * Creates the owner, or updates the one this tenant already has with that phone (§2.2).
 * Notes are kept when the new submission does not mention them.
 */
export async function upsertOwner(
  db: Database,
  tenantId: number,
  owner: { name: string; phone: string; notes: string | null | undefined },
): Promise<OwnerView> {
  const [row] = await db
    .insert(owners)
    .values({ tenantId, name: owner.name, phone: owner.phone, notes: owner.notes ?? null })
    .onConflictDoUpdate({
      target: [owners.tenantId, owners.phone],
      set: {
        name: sql`excluded.name`,
        notes: owner.notes === undefined ? sql`${owners.notes}` : sql`excluded.notes`,
        updatedAt: sql`now()`,
      },
    })
    .returning({ id: owners.id, name: owners.name, phone: owners.phone, notes: owners.notes })
  return row!
}

export interface TenantListFilter {
  statusId?: number | undefined
  propertyTypeId?: number | undefined
  dealTypeId?: number | undefined
  cityId?: number | undefined
  limit: number
  offset: number
}

/** GET /properties: the tenant's own listings, newest first (properties_tenant_recent_idx). */
export async function listTenantProperties(db: Database, tenantId: number, filter: TenantListFilter) {
  const conditions: (SQL | undefined)[] = [
    eq(properties.tenantId, tenantId),
    filter.statusId === undefined ? undefined : eq(properties.statusId, filter.statusId),
    filter.propertyTypeId === undefined ? undefined : eq(properties.propertyTypeId, filter.propertyTypeId),
    filter.dealTypeId === undefined ? undefined : eq(properties.dealTypeId, filter.dealTypeId),
    filter.cityId === undefined ? undefined : eq(properties.cityId, filter.cityId),
  ]
  const where = and(...conditions)
  const [rows, [totals]] = await Promise.all([
    db
      .select({
        id: properties.id,
        propertyTypeId: properties.propertyTypeId,
        dealTypeId: properties.dealTypeId,
        price: properties.price,
        statusId: properties.statusId,
        cityId: properties.cityId,
        districtId: properties.districtId,
        area: properties.area,
        rooms: properties.rooms,
        createdAt: properties.createdAt,
        updatedAt: properties.updatedAt,
      })
      .from(properties)
      .where(where)
      .orderBy(desc(properties.createdAt), desc(properties.id))
      .limit(filter.limit)
      .offset(filter.offset),
    db.select({ total: count() }).from(properties).where(where),
  ])
  return { rows, total: totals?.total ?? 0 }
}

/**
 * Whether the tenant has another live listing (on review or published) that is the same
 * offer: type, deal, city, area, and the same address or the same coordinates. Only
 * listings submitted earlier count, so of two identical submissions the first one passes.
 */
export async function hasEarlierDuplicate(db: Database, listing: PropertyRow): Promise<boolean> {
  const sameAddress =
    listing.address === null ? undefined : sql`lower(btrim(${properties.address})) = lower(btrim(${listing.address}))`
  const samePlace =
    listing.latitude === null || listing.longitude === null
      ? undefined
      : and(eq(properties.latitude, listing.latitude), eq(properties.longitude, listing.longitude))
  if (!sameAddress && !samePlace) return false
  const [row] = await db
    .select({ id: properties.id })
    .from(properties)
    .where(
      and(
        eq(properties.tenantId, listing.tenantId),
        ne(properties.id, listing.id),
        sql`${properties.id} < ${listing.id}`,
        sql`${properties.statusId} in (1, 2)`,
        eq(properties.propertyTypeId, listing.propertyTypeId),
        eq(properties.dealTypeId, listing.dealTypeId),
        listing.cityId === null ? sql`${properties.cityId} is null` : eq(properties.cityId, listing.cityId),
        sql`${properties.area} is not distinct from ${listing.area}::numeric`,
        or(sameAddress, samePlace),
      ),
    )
    .limit(1)
  return row !== undefined
}

// ---------------------------------------------------------------------------------------
// Idempotency-Key (D5).

/**
 * Takes a transaction-scoped advisory lock for one tenant's key, without waiting: false
 * means another request with this key is in flight right now. The lock is released at
 * commit or rollback, so a crash never leaves a key stuck.
 */
export async function tryLockIdempotencyKey(db: Database, tenantId: number, key: string): Promise<boolean> {
  const [row] = await queryRows<{ locked: boolean }>(
    db,
    sql`select pg_try_advisory_xact_lock(hashtextextended(${`${tenantId}:${key}`}, 0)) as locked`,
  )
  return row?.locked ?? false
}

/** The stored response for this key, if it is younger than 24 hours. */
export async function findIdempotencyKey(db: Database, tenantId: number, key: string) {
  const [row] = await db
    .select()
    .from(idempotencyKeys)
    .where(
      and(
        eq(idempotencyKeys.tenantId, tenantId),
        eq(idempotencyKeys.key, key),
        sql`${idempotencyKeys.createdAt} > now() - interval '24 hours'`,
      ),
    )
  return row
}

export async function saveIdempotencyKey(db: Database, values: typeof idempotencyKeys.$inferInsert): Promise<void> {
  await db
    .insert(idempotencyKeys)
    .values(values)
    .onConflictDoUpdate({
      target: [idempotencyKeys.tenantId, idempotencyKeys.key],
      set: {
        requestDigest: values.requestDigest,
        responseStatus: values.responseStatus,
        responseBody: values.responseBody,
        createdAt: sql`now()`,
      },
    })
}

/** Housekeeping: keys past their 24 hours are never replayed again. */
export async function deleteExpiredIdempotencyKeys(db: Database): Promise<number> {
  const deleted = await db
    .delete(idempotencyKeys)
    .where(sql`${idempotencyKeys.createdAt} < now() - interval '24 hours'`)
    .returning({ key: idempotencyKeys.key })
  return deleted.length
}
