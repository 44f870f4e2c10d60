/**
 * The change feed's SQL. The rows of catalogue_changes are written by the database itself
 * (triggers on properties and property_images, migration 0019), one per listing, moved to the
 * end of the feed by each change and numbered in commit order: whatever a reader sees is a
 * prefix of the feed, so a cursor never passes a change that commits later.
 */
import { sql } from 'drizzle-orm'
import { queryRows, type Database, type PipelinedDatabase } from '../../db/client.js'
import type { CatalogueRemovalReason } from '../../db/schema.js'
import { offsetTimestampFromUtcText } from '../../lib/time.js'
import type { DetailRow } from './catalogue.repository.js'

export interface ChangeRow {
  position: number
  listingId: number
  op: 'upsert' | 'remove'
  reason: CatalogueRemovalReason | null
  /** As the API shows it, with a numeric offset. */
  changedAt: string
  /** The listing as the catalogue shows it now: for an upsert, which is the feed's latest change of it. */
  listing: DetailRow | null
}

interface StoredChange {
  position: string
  listing_id: number
  op: 'upsert' | 'remove'
  reason: CatalogueRemovalReason | null
  changed_at: string
  /** As DetailRow, its times as UTC text (`createdAt`, `publishedAt`), mapped below. */
  listing: DetailRow | null
}

/**
 * Up to `limit` changes after `after`, oldest first, how far retention has pruned removals
 * (a reader before that has missed some) and the last position handed out (no cursor the feed
 * gave is past it), read in one statement, so from one snapshot. An
 * upsert's listing comes with it, as `GET /mls/properties/{id}` reads it; the times as UTC text,
 * which JSON carries without a Date.
 */
export async function readChanges(
  db: PipelinedDatabase,
  after: number,
  limit: number,
): Promise<{ changes: ChangeRow[]; prunedThrough: number; lastPosition: number; endPosition: number }> {
  // The page's rows first, on the position index (LIMIT written as a literal, 1 to 1,001, so
  // that even a generic plan reads the index in order and stops), then each row's listing: a
  // listing built in the same query level as the ORDER BY would be built for every change
  // after the cursor before the sort kept a page of them.
  const [result] = await queryRows<{ pruned_through: string; last_position: string; end_position: string | null; changes: StoredChange[] | null }>(
    db,
    sql`select
          (select pruned_through from catalogue_change_horizon) as pruned_through,
          (select case when is_called then last_value else 0 end from catalogue_change_positions) as last_position,
          (select max(position) from catalogue_changes) as end_position,
          (select json_agg(json_build_object(
               'position', page.position, 'listing_id', page.listing_id, 'op', page.op, 'reason', page.reason,
               'changed_at', page.changed_at at time zone 'UTC',
               'listing', (select json_build_object(
                  'id', p.id, 'propertyTypeId', p.property_type_id, 'dealTypeId', p.deal_type_id, 'cityId', p.city_id,
                  'districtId', p.district_id, 'complexId', p.residential_complex_id, 'price', p.price, 'area', p.area,
                  'rooms', p.rooms, 'floor', p.floor, 'totalFloors', p.total_floors, 'latitude', p.latitude, 'longitude', p.longitude,
                  'createdAt', p.created_at at time zone 'UTC', 'publishedAt', p.published_at at time zone 'UTC',
                  'description', p.description, 'attributes', p.attributes,
                  'thumbnailKey', (select pi.thumbnail_key from property_images pi where pi.property_id = p.id order by pi.sort_order, pi.id limit 1),
                  'imageKeys', array(select pi.file_key from property_images pi where pi.property_id = p.id order by pi.sort_order, pi.id))
                from properties p where p.id = page.listing_id and page.op = 'upsert' and p.status_id = 2))
             order by page.position)
           from (
             select c.position, c.listing_id, c.op, c.reason, c.changed_at
             from catalogue_changes c
             where c.position > ${after}
             order by c.position
             limit ${sql.raw(String(Math.min(Math.max(Math.trunc(limit), 1), 1001)))}
           ) page) as changes`,
  )
  const changes = (result?.changes ?? []).map((change) => ({
    position: Number(change.position),
    listingId: change.listing_id,
    op: change.op,
    reason: change.reason,
    changedAt: offsetTimestampFromUtcText(change.changed_at),
    listing: change.listing && {
      ...change.listing,
      createdAt: offsetTimestampFromUtcText(change.listing.createdAt),
      publishedAt: offsetTimestampFromUtcText(change.listing.publishedAt),
    },
  }))
  return {
    changes,
    prunedThrough: Number(result?.pruned_through ?? 0),
    lastPosition: Number(result?.last_position ?? 0),
    endPosition: Number(result?.end_position ?? 0),
  }
}

/**
 * The position of the latest change committed, and the retention horizon, from one snapshot:
 * a feed read from there misses nothing committed after.
 */
export async function latestPosition(db: PipelinedDatabase): Promise<{ position: number; horizon: number }> {
  const [row] = await queryRows<{ position: string | null; horizon: string }>(
    db,
    sql`select (select max(position) from catalogue_changes) as position, (select pruned_through from catalogue_change_horizon) as horizon`,
  )
  return { position: Number(row?.position ?? 0), horizon: Number(row?.horizon ?? 0) }
}

/**
 * Retention: deletes up to `limit` removals older than `days` and moves the horizon past them,
 * in one statement (so a reader sees both or neither); how many. A listing's upsert is never
 * pruned: it is the listing. Rows being changed right now are left for the next run.
 */
export async function pruneRemovals(db: Database, days: number, limit: number): Promise<number> {
  const [row] = await queryRows<{ pruned: number }>(
    db,
    sql`with old as (
          select listing_id from catalogue_changes
          where op = 'remove' and changed_at < now() - make_interval(days => ${days}::int)
          order by changed_at
          limit ${limit}::int
          for update skip locked
        ),
        pruned as (
          delete from catalogue_changes c using old
          where c.listing_id = old.listing_id and c.op = 'remove'
          returning c.position
        ),
        horizon as (
          update catalogue_change_horizon set pruned_through = greatest(pruned_through, (select max(position) from pruned))
          where exists (select 1 from pruned)
        )
        select count(*)::int as pruned from pruned`,
  )
  return row?.pruned ?? 0
}
