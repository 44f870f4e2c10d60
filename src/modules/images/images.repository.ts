import { and, asc, count, eq, inArray, or, sql, type SQL } from 'drizzle-orm'
import { queryRows, type Database, type PipelinedDatabase } from '../../db/client.js'
import { properties, propertyImages } from '../../db/schema.js'
import type { NamedKey } from './orphan-files.js'

export type ImageRow = typeof propertyImages.$inferSelect
export type NewImage = typeof propertyImages.$inferInsert

const displayOrder = [asc(propertyImages.propertyId), asc(propertyImages.sortOrder), asc(propertyImages.id)]

/** The tenant's photos, by property, then display order. */
export async function listImages(db: PipelinedDatabase, tenantId: number, propertyId?: number): Promise<ImageRow[]> {
  const conditions: SQL[] = [eq(propertyImages.tenantId, tenantId)]
  if (propertyId !== undefined) conditions.push(eq(propertyImages.propertyId, propertyId))
  return db
    .select()
    .from(propertyImages)
    .where(and(...conditions))
    .orderBy(...displayOrder)
}

export async function findImage(db: Database, tenantId: number, id: number): Promise<ImageRow | undefined> {
  const [row] = await db
    .select()
    .from(propertyImages)
    .where(and(eq(propertyImages.tenantId, tenantId), eq(propertyImages.id, id)))
  return row
}

/**
 * The tenant's property, as far as its photos care (its status, and whether a suspension holds it), or undefined;
 * with `lock`, held until the transaction ends.
 */
export async function findOwnProperty(
  db: Database,
  tenantId: number,
  propertyId: number,
  lock = false,
): Promise<{ statusId: number; heldStatusId: number | null } | undefined> {
  const query = db
    .select({ statusId: properties.statusId, heldStatusId: properties.heldStatusId })
    .from(properties)
    .where(and(eq(properties.tenantId, tenantId), eq(properties.id, propertyId)))
  const [row] = lock ? await query.for('update') : await query
  return row
}

export async function countImages(db: Database, tenantId: number, propertyId: number): Promise<number> {
  const [row] = await db
    .select({ images: count() })
    .from(propertyImages)
    .where(and(eq(propertyImages.tenantId, tenantId), eq(propertyImages.propertyId, propertyId)))
  return row?.images ?? 0
}

export async function insertImage(db: Database, values: NewImage): Promise<ImageRow> {
  const [row] = await db.insert(propertyImages).values(values).returning()
  return row!
}

export async function updateSortOrder(db: Database, tenantId: number, id: number, sortOrder: number): Promise<ImageRow | undefined> {
  const [row] = await db
    .update(propertyImages)
    .set({ sortOrder })
    .where(and(eq(propertyImages.tenantId, tenantId), eq(propertyImages.id, id)))
    .returning()
  return row
}

/** Deletes one photo's row; its property and storage keys (for removing the files), or undefined. */
export async function deleteImage(db: Database, tenantId: number, id: number): Promise<{ propertyId: number; keys: string[] } | undefined> {
  const [row] = await db
    .delete(propertyImages)
    .where(and(eq(propertyImages.tenantId, tenantId), eq(propertyImages.id, id)))
    .returning({ propertyId: propertyImages.propertyId, fileKey: propertyImages.fileKey, thumbnailKey: propertyImages.thumbnailKey })
  return row && { propertyId: row.propertyId, keys: [row.fileKey, row.thumbnailKey] }
}

/** Deletes a property's photo rows (before the property itself); their storage keys. */
export async function deletePropertyImages(db: Database, tenantId: number, propertyId: number): Promise<string[]> {
  const rows = await db
    .delete(propertyImages)
    .where(and(eq(propertyImages.tenantId, tenantId), eq(propertyImages.propertyId, propertyId)))
    .returning({ fileKey: propertyImages.fileKey, thumbnailKey: propertyImages.thumbnailKey })
  return rows.flatMap((row) => [row.fileKey, row.thumbnailKey])
}

/**
 * Up to `limit` storage keys that rows name (photos and thumbnails), the first after `after`
 * in byte order (collation "C", the order storage lists keys in); each branch reads its
 * unique index in order.
 */
export async function namedKeysAfter(db: Database, after: string, limit: number): Promise<NamedKey[]> {
  const rows = await queryRows<{ key: string; image_id: number; created_at: Date | string }>(
    db,
    sql`select key, image_id, created_at from (
          (select file_key collate "C" as key, id as image_id, created_at from property_images
           where file_key collate "C" > ${after}::text order by file_key collate "C" limit ${limit}::int)
          union all
          (select thumbnail_key collate "C", id, created_at from property_images
           where thumbnail_key collate "C" > ${after}::text order by thumbnail_key collate "C" limit ${limit}::int)
        ) named
        order by key collate "C"
        limit ${limit}::int`,
  )
  return rows.map((row) => ({ key: row.key, imageId: row.image_id, createdAt: new Date(row.created_at) }))
}

/** Which of `keys` a row names, as its photo or its thumbnail. */
export async function keysNamedByRows(db: Database, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set()
  const fileKey = sql`${propertyImages.fileKey} collate "C"`
  const thumbnailKey = sql`${propertyImages.thumbnailKey} collate "C"`
  const rows = await db
    .select({ fileKey: propertyImages.fileKey, thumbnailKey: propertyImages.thumbnailKey })
    .from(propertyImages)
    .where(or(inArray(fileKey, [...keys]), inArray(thumbnailKey, [...keys])))
  return new Set(rows.flatMap((row) => [row.fileKey, row.thumbnailKey]))
}
