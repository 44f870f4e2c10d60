/**
 * The database schema, one source for Drizzle's queries and for the SQL migrations that
 * `npm run db:generate` writes into ./drizzle (checked in, applied at start).
 */
import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  char,
  check,
  doublePrecision,
  foreignKey,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  unique,
  varchar,
} from 'drizzle-orm/pg-core'
import type { EventSubject } from '../modules/catalogue/listing-facts.js'
import type { ListingFilter } from '../modules/catalogue/listing-filter.js'

const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow()

// ---------------------------------------------------------------------------------------
// Reference data. Dictionary ids are part of the public contract and seeded by migrations.

export const propertyTypes = pgTable('property_types', {
  id: smallint('id').primaryKey(),
  name: text('name').notNull().unique(),
})

export const dealTypes = pgTable('deal_types', {
  id: smallint('id').primaryKey(),
  name: text('name').notNull().unique(),
})

export const propertyStatuses = pgTable('property_statuses', {
  id: smallint('id').primaryKey(),
  code: text('code').notNull().unique(),
  name: text('name').notNull().unique(),
})

export const cities = pgTable(
  'cities',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    name: text('name').notNull(),
    country: char('country', { length: 2 }).notNull(),
    region: text('region'),
    latitude: doublePrecision('latitude'),
    longitude: doublePrecision('longitude'),
    createdAt: createdAt(),
  },
  (t) => [unique('cities_country_region_name_key').on(t.country, t.region, t.name).nullsNotDistinct()],
)

export const districts = pgTable(
  'districts',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    cityId: integer('city_id')
      .notNull()
      .references(() => cities.id),
    name: text('name').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    unique('districts_city_id_name_key').on(t.cityId, t.name),
    // Target of the composite foreign keys that prove a district lies in the given city.
    unique('districts_id_city_id_key').on(t.id, t.cityId),
  ],
)

export const residentialComplexes = pgTable(
  'residential_complexes',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    cityId: integer('city_id')
      .notNull()
      .references(() => cities.id),
    districtId: integer('district_id'),
    name: text('name').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    unique('residential_complexes_city_id_name_key').on(t.cityId, t.name),
    unique('residential_complexes_id_city_id_key').on(t.id, t.cityId),
    foreignKey({
      name: 'residential_complexes_district_in_city_fkey',
      columns: [t.districtId, t.cityId],
      foreignColumns: [districts.id, districts.cityId],
    }),
  ],
)

// ---------------------------------------------------------------------------------------
// Tenants, their registration requests and API keys.

export const tenants = pgTable('tenants', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  companyName: text('company_name').notNull(),
  email: text('email').notNull(),
  country: char('country', { length: 2 }).notNull(),
  contactName: text('contact_name'),
  phone: text('phone'),
  createdAt: createdAt(),
  /**
   * Set while an operator has the agency suspended: its keys are refused, its published listings
   * are out of the catalogue (see properties.held_status_id), no check publishes its listings and
   * no webhook goes to it.
   */
  suspendedAt: timestamp('suspended_at', { withTimezone: true, mode: 'date' }),
  /**
   * When its latest suspension was lifted. An event raised before then and fanned out after it
   * (the worker was down or behind) is not delivered to the agency, as a fan-out during the
   * suspension would not have delivered it: what a subscriber gets never depends on when the
   * worker ran.
   */
  unsuspendedAt: timestamp('unsuspended_at', { withTimezone: true, mode: 'date' }),
})

export const registrationStatuses = ['pending', 'approved', 'rejected'] as const
export type RegistrationStatus = (typeof registrationStatuses)[number]

export const registrationRequests = pgTable(
  'registration_requests',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    requestCode: text('request_code').notNull().unique(),
    companyName: text('company_name').notNull(),
    email: text('email').notNull(),
    country: char('country', { length: 2 }).notNull(),
    contactName: text('contact_name'),
    phone: text('phone'),
    status: text('status').$type<RegistrationStatus>().notNull().default('pending'),
    rejectReason: text('reject_reason'),
    tenantId: integer('tenant_id').references(() => tenants.id),
    /** The API key issued on approval, AES-GCM encrypted with SECRET_KEY (the status lookup returns it). */
    apiKeyEncrypted: text('api_key_encrypted'),
    createdAt: createdAt(),
    decidedAt: timestamp('decided_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    check('registration_requests_status_check', sql`${t.status} in ('pending', 'approved', 'rejected')`),
    check(
      'registration_requests_approved_has_tenant_check',
      sql`(${t.status} = 'approved') = (${t.tenantId} is not null and ${t.apiKeyEncrypted} is not null)`,
    ),
    index('registration_requests_status_created_at_idx').on(t.status, t.createdAt),
  ],
)

export const apiKeys = pgTable(
  'api_keys',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    tenantId: integer('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    /** The first characters of the key, enough for a person to tell keys apart. */
    displayPrefix: text('display_prefix').notNull(),
    /** Hex SHA-256 of the whole key: authentication looks keys up by it. */
    digest: text('digest').notNull(),
    /** The agency's label for the key ("CRM export"); null for the key issued on approval. */
    name: text('name'),
    createdAt: createdAt(),
    /** After this the key is refused like an unknown one; null never expires. */
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    /** When the key was last used, written at most once a minute per key. */
    lastUsedAt: timestamp('last_used_at', { withTimezone: true, mode: 'date' }),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    uniqueIndex('api_keys_digest_key').on(t.digest),
    // An agency's keys, newest first (its list, and counting its active keys).
    index('api_keys_tenant_idx').on(t.tenantId, t.id.desc()),
  ],
)

// ---------------------------------------------------------------------------------------
// Properties and the public catalogue.

export const owners = pgTable(
  'owners',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    tenantId: integer('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** Normalised (`+7 912 345-67-89`): the owner's identity within one tenant. */
    phone: text('phone').notNull(),
    notes: text('notes'),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [unique('owners_tenant_id_phone_key').on(t.tenantId, t.phone)],
)

/** A finding of the internal check: a stable code, the field it is about, a sentence. */
export interface ModerationReason {
  code: string
  field: string | null
  message: string
}

export interface ModerationResult {
  checked_at: string
  reasons: ModerationReason[]
}

export type AttributeValues = Record<string, string | number | boolean>

export const properties = pgTable(
  'properties',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    tenantId: integer('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    statusId: smallint('status_id')
      .notNull()
      .default(1)
      .references(() => propertyStatuses.id),
    propertyTypeId: smallint('property_type_id')
      .notNull()
      .references(() => propertyTypes.id),
    dealTypeId: smallint('deal_type_id')
      .notNull()
      .references(() => dealTypes.id),
    price: numeric('price', { precision: 15, scale: 2, mode: 'number' }),
    description: text('description'),
    ownerId: integer('owner_id').references(() => owners.id, { onDelete: 'set null' }),
    cityId: integer('city_id').references(() => cities.id),
    districtId: integer('district_id'),
    residentialComplexId: integer('residential_complex_id'),
    address: text('address'),
    street: text('street'),
    houseNumber: text('house_number'),
    apartmentNumber: text('apartment_number'),
    latitude: numeric('latitude', { precision: 9, scale: 6, mode: 'number' }),
    longitude: numeric('longitude', { precision: 9, scale: 6, mode: 'number' }),
    /** Typed values (numbers, booleans, strings) keyed by catalogue name. */
    attributes: jsonb('attributes').$type<AttributeValues>().notNull().default({}),
    // Copies of the attributes the catalogue filters and shows, kept by the database itself.
    area: numeric('area', { precision: 12, scale: 2, mode: 'number' }).generatedAlwaysAs(sql`((attributes ->> 'area')::numeric(12,2))`),
    rooms: integer('rooms').generatedAlwaysAs(sql`((attributes ->> 'rooms')::integer)`),
    floor: integer('floor').generatedAlwaysAs(sql`((attributes ->> 'floor')::integer)`),
    totalFloors: integer('total_floors').generatedAlwaysAs(sql`((attributes ->> 'total_floors')::integer)`),
    moderation: jsonb('moderation').$type<ModerationResult>(),
    /**
     * The status to give back when the agency is unsuspended: while it is suspended its published
     * listings are in status 4 (withdrawn), out of the catalogue, with 2 here. Null otherwise.
     */
    heldStatusId: smallint('held_status_id'),
    /** Set when the listing waits for the internal check; the worker clears it. */
    reviewRequestedAt: timestamp('review_requested_at', { withTimezone: true, mode: 'date' }),
    // To the millisecond, as shown: two listings created within one millisecond show the same
    // time, and are then listed by id (newest first, ties by id), as their times say.
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' })
      .notNull()
      .default(sql`date_trunc('milliseconds', now())`),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    publishedAt: timestamp('published_at', { withTimezone: true, mode: 'date' }),
    /**
     * The agency's own id of the listing (its CRM's), unique within the agency; null when it gave
     * none. Bookkeeping, not listing content: never shown in the catalogue, never checked, never
     * part of a revision, and changing it changes nothing the catalogue shows (migration 0023).
     */
    externalId: varchar('external_id', { length: 100 }),
  },
  (t) => [
    foreignKey({
      name: 'properties_district_in_city_fkey',
      columns: [t.districtId, t.cityId],
      foreignColumns: [districts.id, districts.cityId],
    }),
    foreignKey({
      name: 'properties_complex_in_city_fkey',
      columns: [t.residentialComplexId, t.cityId],
      foreignColumns: [residentialComplexes.id, residentialComplexes.cityId],
    }),
    check('properties_published_has_city_check', sql`${t.statusId} <> 2 or ${t.cityId} is not null`),
    // The change feed and the catalogue order published listings by when they were published.
    check('properties_published_has_published_at_check', sql`${t.statusId} <> 2 or ${t.publishedAt} is not null`),
    // A listing held for a suspension stays withdrawn until it is given back.
    check('properties_held_is_withdrawn_check', sql`${t.heldStatusId} is null or ${t.statusId} = 4`),
    // The tenant's list (GET /properties): its filters narrow a tenant's rows, newest first.
    index('properties_tenant_recent_idx').on(t.tenantId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // The moderation queue: only rows waiting for the check are in it.
    index('properties_review_queue_idx')
      .on(t.reviewRequestedAt)
      .where(sql`${t.reviewRequestedAt} is not null`),
    // The public catalogue's indexes are in migrations 0007 and 0010, hand-written because Drizzle
    // cannot declare INCLUDE. Each is partial on published rows, ends in the order it serves,
    // and carries every column a page shows or filters on, so a page is one index-only range
    // scan (no sort, no table row read) and a filter on any other column is checked in it:
    //   no filter, newest first            → catalogue_recent_idx
    //   city_id                            → catalogue_city_recent_idx
    //   city_id + type + deal              → catalogue_city_type_deal_recent_idx
    //   type and/or deal without a city    → catalogue_type_deal_recent_idx
    //   a deal without city or type        → catalogue_deal_recent_idx (a sale page skips no rents)
    //   district_id                        → catalogue_district_recent_idx; with a price range or
    //                                          sort=price_* → catalogue_district_price_idx
    //   sort=price_* with city, type, deal → catalogue_city_type_deal_price_idx
    //   sort=price_* with city and deal    → catalogue_city_deal_price_idx; with type and deal → catalogue_type_deal_price_idx
    //   sort=price_* with a city           → catalogue_city_price_idx; with a deal → catalogue_deal_price_idx
    //   sort=price_* with neither          → catalogue_price_idx
    //   tenant_id                          → properties_tenant_recent_idx + the status filter
    //   a price range, newest first        → the *_recent_idx of the other filters, walked with the
    //                                          price checked in it, when the range keeps many
    //                                          listings; else the *_price_idx range, then sorted
    //                                          (the service chooses: PagePlan in catalogue.repository.ts)
    //   bbox, near, clusters               → catalogue_geo_idx (migrations 0021, 0026): the map grid's row,
    //                                          then the coordinates as float8, when the box keeps few
    //                                          of the search's listings; else the other filters'
    //                                          index, walked with the box checked
    // Totals and clusters of a box, filtered on type, deal and rooms at most, sum
    // catalogue_counts_by_cell inside the box and count its edge on catalogue_geo_idx.
    // A page by cursor reads the same index from the cursor's key on: `(created_at, id) < (…)` or
    // `(price, id) > (…)` is the start of its range (catalogue-cursor.ts).
    // Totals for filters on city, type, deal, district and rooms come from catalogue_counts.
    // With a price or area filter they are counted on the *_price_idx indexes: an index-only
    // scan over the price range.
    index('properties_owner_id_idx').on(t.ownerId),
    // PUT/GET/DELETE /properties/by-external-id/{external_id}; one listing per id within an agency.
    uniqueIndex('properties_tenant_external_id_key')
      .on(t.tenantId, t.externalId)
      .where(sql`${t.externalId} is not null`),
  ],
)

/** The columns an agency submits, as a revision keeps them (see propertyRevisions). */
export type RevisionFields = Pick<
  NewPropertyColumns,
  | 'propertyTypeId'
  | 'dealTypeId'
  | 'price'
  | 'description'
  | 'ownerId'
  | 'cityId'
  | 'districtId'
  | 'residentialComplexId'
  | 'address'
  | 'street'
  | 'houseNumber'
  | 'apartmentNumber'
  | 'latitude'
  | 'longitude'
  | 'attributes'
>

export const revisionStatuses = ['pending_review', 'rejected'] as const
export type RevisionStatus = (typeof revisionStatuses)[number]

/**
 * A change to a published listing, waiting for the internal check or rejected by it. While
 * there is one, the listing's row in properties stays the approved version the catalogue shows,
 * and the agency sees this one; approval writes it into the row, discarding drops it. The row's
 * review_requested_at puts the listing in the check's queue, as for a new submission.
 */
export const propertyRevisions = pgTable(
  'property_revisions',
  {
    propertyId: integer('property_id')
      .primaryKey()
      .references(() => properties.id, { onDelete: 'cascade' }),
    tenantId: integer('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    status: text('status').$type<RevisionStatus>().notNull().default('pending_review'),
    /** Every submitted column, as the agency left it: what the listing becomes on approval. */
    fields: jsonb('fields').$type<RevisionFields>().notNull(),
    /** The check's findings on this revision; null until it has run. */
    moderation: jsonb('moderation').$type<ModerationResult>(),
    submittedAt: timestamp('submitted_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [check('property_revisions_status_check', sql`${t.status} in ('pending_review', 'rejected')`)],
)

export type RevisionRow = typeof propertyRevisions.$inferSelect

/**
 * The change feed (GET /mls/changes): one row per listing that is or was in the catalogue, moved
 * to the end of the feed by every change of what the catalogue shows of it (triggers on
 * properties and property_images, migration 0019). `position` is given when the changing
 * transaction commits, in commit order (see the migration), so a reader never passes a change
 * that commits later with a smaller position. An `upsert` is read with the listing as it is now,
 * which is how it was at its latest change, the one this row records.
 */
export const catalogueChanges = pgTable(
  'catalogue_changes',
  {
    // No foreign key: a removal outlives its listing.
    listingId: integer('listing_id').primaryKey(),
    /** Null only inside the transaction that changes the listing, until it commits. */
    position: bigint('position', { mode: 'number' }),
    op: text('op').$type<'upsert' | 'remove'>().notNull(),
    reason: text('reason').$type<CatalogueRemovalReason>(),
    changedAt: timestamp('changed_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('catalogue_changes_position_key').on(t.position),
    // The changes of the committing transaction, which alone may have no position yet.
    index('catalogue_changes_unsequenced_idx')
      .on(t.listingId)
      .where(sql`${t.position} is null`),
    // Retention reads the oldest removals.
    index('catalogue_changes_removed_idx')
      .on(t.changedAt)
      .where(sql`${t.op} = 'remove'`),
    check('catalogue_changes_op_check', sql`${t.op} in ('upsert', 'remove')`),
    check('catalogue_changes_reason_check', sql`(${t.op} = 'remove') = (${t.reason} is not null)`),
  ],
)

export const catalogueRemovalReasons = ['withdrawn', 'closed', 'rejected', 'deleted', 'suspended'] as const
export type CatalogueRemovalReason = (typeof catalogueRemovalReasons)[number]

/** How far retention has pruned removals from the feed: a cursor before this has missed some (410). One row. */
export const catalogueChangeHorizon = pgTable(
  'catalogue_change_horizon',
  {
    id: smallint('id').primaryKey().default(1),
    prunedThrough: bigint('pruned_through', { mode: 'number' }).notNull().default(0),
  },
  (t) => [check('catalogue_change_horizon_one_row_check', sql`${t.id} = 1`)],
)

export type PropertyRow = typeof properties.$inferSelect
/** Columns a submission sets (the generated copies of attributes excluded). */
export type NewPropertyColumns = typeof properties.$inferInsert

/**
 * Photos of a property. The files live in the configured storage under server-chosen
 * keys; a row is written only after both files are stored, and the files are removed after
 * the row is deleted, so a row never points at a missing file.
 */
export const propertyImages = pgTable(
  'property_images',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    /** Copied from the property so the tenant's list and checks need no join. */
    tenantId: integer('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    propertyId: integer('property_id')
      .notNull()
      .references(() => properties.id, { onDelete: 'cascade' }),
    sortOrder: integer('sort_order').notNull().default(0),
    /** Storage key of the re-encoded photo. */
    fileKey: text('file_key').notNull(),
    /** Storage key of the small rendition (about 400 px wide) shown as the thumbnail. */
    thumbnailKey: text('thumbnail_key').notNull(),
    contentType: text('content_type').notNull(),
    width: integer('width').notNull(),
    height: integer('height').notNull(),
    bytes: integer('bytes').notNull(),
    /** The address it was downloaded from, for photos added by URL. */
    sourceUrl: text('source_url'),
    /**
     * Added by the listing's feed, which keeps such photos as its offer lists them (migration
     * 0033); the agency's own, uploaded or added by URL, the feed leaves alone.
     */
    addedByFeed: boolean('added_by_feed').notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [
    // A property's photos in display order; also the catalogue's first photo per listing.
    index('property_images_property_order_idx').on(t.propertyId, t.sortOrder, t.id),
    index('property_images_tenant_idx').on(t.tenantId, t.propertyId, t.sortOrder, t.id),
    // The orphan-file sweep walks the rows' keys beside the storage's listing, both in byte
    // order (collation "C"), and checks keys before removing files. A key names one file.
    uniqueIndex('property_images_file_key_key').on(sql`${t.fileKey} collate "C"`),
    uniqueIndex('property_images_thumbnail_key_key').on(sql`${t.thumbnailKey} collate "C"`),
  ],
)

/**
 * The number of published listings per (city, type, deal, district, rooms), kept exact by a
 * trigger on properties (migration 0002). The catalogue's `total` for any filter on these
 * columns is a sum over a few thousand rows instead of a count over the catalogue. Districts
 * and rooms that are not set are stored as 0 and -1, since key columns cannot be null.
 */
export const catalogueCounts = pgTable(
  'catalogue_counts',
  {
    cityId: integer('city_id').notNull(),
    propertyTypeId: smallint('property_type_id').notNull(),
    dealTypeId: smallint('deal_type_id').notNull(),
    districtId: integer('district_id').notNull(),
    rooms: integer('rooms').notNull(),
    listings: integer('listings').notNull(),
  },
  (t) => [primaryKey({ columns: [t.cityId, t.propertyTypeId, t.dealTypeId, t.districtId, t.rooms] })],
)

/**
 * The same counts summed over district and rooms: the landing page and the city, type and deal
 * filters (most of the traffic) sum a few hundred rows here instead of thousands above.
 */
export const catalogueCountsByCity = pgTable(
  'catalogue_counts_by_city',
  {
    cityId: integer('city_id').notNull(),
    propertyTypeId: smallint('property_type_id').notNull(),
    dealTypeId: smallint('deal_type_id').notNull(),
    listings: integer('listings').notNull(),
  },
  (t) => [primaryKey({ columns: [t.cityId, t.propertyTypeId, t.dealTypeId] })],
)

/**
 * The same counts by (city, type, deal, rooms) and price band (migration 0008): a price band
 * is a price's first two significant digits at its magnitude, so 12,345,678 is in the band
 * [12,000,000, 13,000,000). A price-range total sums the bands wholly inside the range here
 * and counts on the price indexes only the listings of the two bands at its ends. Rooms not
 * set are stored as -1.
 */
export const catalogueCountsByPrice = pgTable(
  'catalogue_counts_by_price',
  {
    cityId: integer('city_id').notNull(),
    propertyTypeId: smallint('property_type_id').notNull(),
    dealTypeId: smallint('deal_type_id').notNull(),
    rooms: integer('rooms').notNull(),
    priceBand: integer('price_band').notNull(),
    listings: integer('listings').notNull(),
  },
  (t) => [primaryKey({ columns: [t.cityId, t.propertyTypeId, t.dealTypeId, t.rooms, t.priceBand] })],
)

/**
 * The same price bands summed over the cities (migration 0009), for a price range searched
 * without a city: summing the per-city rows would read every city's bands of the deal.
 */
export const catalogueCountsByPriceAllCities = pgTable(
  'catalogue_counts_by_price_all_cities',
  {
    propertyTypeId: smallint('property_type_id').notNull(),
    dealTypeId: smallint('deal_type_id').notNull(),
    rooms: integer('rooms').notNull(),
    priceBand: integer('price_band').notNull(),
    listings: integer('listings').notNull(),
  },
  (t) => [primaryKey({ name: 'catalogue_counts_by_price_all_cities_pk', columns: [t.propertyTypeId, t.dealTypeId, t.rooms, t.priceBand] })],
)

/**
 * The same price bands per district (migration 0016), for a price range searched with a
 * district: counted on the listings, its total grew with the district. A district belongs to
 * one city, which is kept beside it so that a search naming a city and another city's district
 * stays exact (nothing matches). Listings without a district are not kept here.
 */
export const catalogueCountsByDistrictPrice = pgTable(
  'catalogue_counts_by_district_price',
  {
    districtId: integer('district_id').notNull(),
    cityId: integer('city_id').notNull(),
    propertyTypeId: smallint('property_type_id').notNull(),
    dealTypeId: smallint('deal_type_id').notNull(),
    rooms: integer('rooms').notNull(),
    priceBand: integer('price_band').notNull(),
    listings: integer('listings').notNull(),
  },
  (t) => [
    primaryKey({
      name: 'catalogue_counts_by_district_price_pk',
      columns: [t.districtId, t.cityId, t.propertyTypeId, t.dealTypeId, t.rooms, t.priceBand],
    }),
  ],
)

/**
 * Published listings with coordinates per cell of the map's grid at zoom 11 (geo.ts
 * COUNTED_ZOOM), type, deal and rooms (migrations 0026 and 0027, kept by trigger): their number, the sums
 * of their coordinates in millionths of a degree and the box that holds them. A map's total and
 * clusters sum the cells wholly inside its box and count only the listings of the cells on its
 * edge. The primary key carries the other columns (INCLUDE), so a box's cells are read from it alone.
 */
export const catalogueCountsByCell = pgTable(
  'catalogue_counts_by_cell',
  {
    cellRow: integer('cell_row').notNull(),
    cellColumn: integer('cell_column').notNull(),
    propertyTypeId: smallint('property_type_id').notNull(),
    dealTypeId: smallint('deal_type_id').notNull(),
    rooms: integer('rooms').notNull(),
    listings: integer('listings').notNull(),
    latitudeSum: bigint('latitude_sum', { mode: 'number' }).notNull(),
    longitudeSum: bigint('longitude_sum', { mode: 'number' }).notNull(),
    south: doublePrecision('south').notNull(),
    north: doublePrecision('north').notNull(),
    west: doublePrecision('west').notNull(),
    east: doublePrecision('east').notNull(),
  },
  (t) => [primaryKey({ name: 'catalogue_counts_by_cell_pk', columns: [t.cellRow, t.cellColumn, t.propertyTypeId, t.dealTypeId, t.rooms] })],
)

/**
 * catalogue_counts_by_cell's counts per type, deal, cell and price band instead of rooms
 * (migration 0028, kept by trigger; the bands are catalogue_counts_by_price's): the listings with
 * coordinates and a price. A box with a price range (and a type and a deal at most) sums the
 * cells wholly inside it in the bands strictly inside the range.
 */
export const catalogueCountsByCellPrice = pgTable(
  'catalogue_counts_by_cell_price',
  {
    propertyTypeId: smallint('property_type_id').notNull(),
    dealTypeId: smallint('deal_type_id').notNull(),
    cellRow: integer('cell_row').notNull(),
    cellColumn: integer('cell_column').notNull(),
    priceBand: integer('price_band').notNull(),
    listings: integer('listings').notNull(),
    latitudeSum: bigint('latitude_sum', { mode: 'number' }).notNull(),
    longitudeSum: bigint('longitude_sum', { mode: 'number' }).notNull(),
    south: doublePrecision('south').notNull(),
    north: doublePrecision('north').notNull(),
    west: doublePrecision('west').notNull(),
    east: doublePrecision('east').notNull(),
  },
  (t) => [primaryKey({ name: 'catalogue_counts_by_cell_price_pk', columns: [t.propertyTypeId, t.dealTypeId, t.cellRow, t.cellColumn, t.priceBand] })],
)

/**
 * A counter per city (0 for a listing without one) that statement triggers on properties and
 * property_images (migration 0006) raise in the same transaction as any change to what the
 * catalogue shows of that city's published listings. A process may keep a catalogue answer as
 * long as the counters it depends on have not moved: see catalogue-versions.ts.
 */
export const catalogueVersions = pgTable('catalogue_versions', {
  cityId: integer('city_id').primaryKey(),
  version: bigint('version', { mode: 'number' }).notNull(),
})

/** `Idempotency-Key` of POST /properties: the first response, replayed for 24 hours. */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    tenantId: integer('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    requestDigest: text('request_digest').notNull(),
    responseStatus: smallint('response_status').notNull(),
    responseBody: jsonb('response_body').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.key] }), index('idempotency_keys_created_at_idx').on(t.createdAt)],
)

/**
 * The outbox: every event, written in the transaction of the change that caused it, so none
 * is lost or sent for a change that did not commit. Webhook delivery reads from here.
 */
export const events = pgTable(
  'events',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    type: text('type').notNull(),
    /** The tenant the event belongs to; `mls.new_listing` goes to every subscriber regardless. */
    tenantId: integer('tenant_id').references(() => tenants.id, { onDelete: 'cascade' }),
    data: jsonb('data').notNull(),
    /**
     * For `mls.*` events: the listing's filterable facts before and after the change, which
     * fan-out matches against filtered subscriptions (see listing-facts.ts). Never sent.
     */
    subject: jsonb('subject').$type<EventSubject>(),
    createdAt: createdAt(),
    /** Set once deliveries have been fanned out to subscriptions. */
    dispatchedAt: timestamp('dispatched_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    index('events_undispatched_idx')
      .on(t.id)
      .where(sql`${t.dispatchedAt} is null`),
    // Retention reads only the events past EVENT_RETENTION_DAYS, oldest first.
    index('events_created_at_idx').on(t.createdAt),
  ],
)

// ---------------------------------------------------------------------------------------
// Webhooks: subscriptions, one delivery per (event, subscription), one log row per attempt.

export const webhookSubscriptions = pgTable(
  'webhook_subscriptions',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    tenantId: integer('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    events: text('events').array().notNull(),
    description: text('description'),
    /** For `mls.*` events: only listings that match (listing-filter.ts); null for every listing. */
    filter: jsonb('filter').$type<ListingFilter>(),
    /** The signing secret (`whsec_…`), encrypted with SECRET_KEY; shown once at creation. */
    secretSealed: text('secret_sealed').notNull(),
    isActive: boolean('is_active').notNull().default(true),
    /** Why the service switched it off (410 Gone, or days without a success), and when. */
    disabledReason: text('disabled_reason'),
    disabledAt: timestamp('disabled_at', { withTimezone: true, mode: 'date' }),
    /** First failure since the last success; null while deliveries succeed. */
    failingSince: timestamp('failing_since', { withTimezone: true, mode: 'date' }),
    createdAt: createdAt(),
  },
  (t) => [
    index('webhook_subscriptions_tenant_idx').on(t.tenantId, t.id),
    // Fan-out looks up the active subscriptions for an event type.
    index('webhook_subscriptions_active_events_idx')
      .using('gin', t.events)
      .where(sql`${t.isActive}`),
  ],
)

/**
 * One row: a number that changes, by a trigger on webhook_subscriptions (migration
 * subscription_filters), whenever a subscription is created or deleted, or its events or filter
 * change. A fan-out worker keeps the filtered subscriptions in memory and reads them again only
 * when it has moved (subscription-filters.ts).
 */
export const webhookSubscriptionsRevision = pgTable(
  'webhook_subscriptions_revision',
  {
    one: boolean('one').primaryKey().default(true),
    revision: bigint('revision', { mode: 'number' }).notNull().default(0),
  },
  (t) => [check('webhook_subscriptions_revision_one_check', sql`${t.one}`)],
)

export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    subscriptionId: integer('subscription_id')
      .notNull()
      .references(() => webhookSubscriptions.id, { onDelete: 'cascade' }),
    eventId: bigint('event_id', { mode: 'number' })
      .notNull()
      .references(() => events.id, { onDelete: 'cascade' }),
    trigger: text('trigger').notNull().default('event'),
    /**
     * Null: the event as written. `unmatched`: instead of an `mls.*` event, an
     * `mls.listing_removed` with reason `unmatched`, for a filtered subscription the event's
     * listing has stopped matching; its body is built at each attempt from the event.
     */
    variant: text('variant'),
    /** `pending` until it succeeds (`succeeded`) or is given up (`failed`). */
    status: text('status').notNull().default('pending'),
    /** Attempts started so far; a claim counts one, so no attempt number is used twice. */
    attempts: integer('attempts').notNull().default(0),
    /**
     * When the next attempt is due. A claim moves it past the lease, so a worker that dies
     * mid-attempt leaves the delivery due again once the lease runs out.
     */
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** Set by the claim; only the holder may record the outcome. */
    leaseToken: text('lease_token'),
    createdAt: createdAt(),
  },
  (t) => [
    // The workers' queue: due pending deliveries, oldest due first.
    index('webhook_deliveries_due_idx')
      .on(t.nextAttemptAt, t.id)
      .where(sql`${t.status} = 'pending'`),
    // Cancelling a subscription's pending deliveries, and the cascade when it is deleted.
    index('webhook_deliveries_subscription_idx').on(t.subscriptionId),
    // Retention: finished deliveries, oldest first. Deleted rows leave it, so no batch reads
    // again what an earlier one deleted.
    index('webhook_deliveries_finished_idx')
      .on(t.createdAt)
      .where(sql`${t.status} <> 'pending'`),
    unique('webhook_deliveries_event_subscription_key').on(t.eventId, t.subscriptionId),
    check('webhook_deliveries_status_check', sql`${t.status} in ('pending', 'succeeded', 'failed')`),
    check('webhook_deliveries_trigger_check', sql`${t.trigger} in ('event', 'test')`),
    check('webhook_deliveries_variant_check', sql`${t.variant} in ('unmatched')`),
  ],
)

export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    deliveryId: bigint('delivery_id', { mode: 'number' })
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: 'cascade' }),
    subscriptionId: integer('subscription_id')
      .notNull()
      .references(() => webhookSubscriptions.id, { onDelete: 'cascade' }),
    eventId: bigint('event_id', { mode: 'number' }).notNull(),
    eventType: text('event_type').notNull(),
    trigger: text('trigger').notNull(),
    attempt: integer('attempt').notNull(),
    /** The attempt's own outcome, `succeeded` or `failed`; next_attempt_at says whether another follows. */
    status: text('status').notNull(),
    responseStatusCode: integer('response_status_code'),
    /** The first 4 KiB of the answer, as text. */
    responseBody: text('response_body'),
    error: text('error'),
    durationMs: integer('duration_ms').notNull(),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date' }),
    createdAt: createdAt(),
  },
  (t) => [
    // A subscription's log, newest first (ids grow with time).
    index('webhook_attempts_subscription_idx').on(t.subscriptionId, t.id.desc()),
    index('webhook_attempts_delivery_idx').on(t.deliveryId),
    check('webhook_attempts_status_check', sql`${t.status} in ('succeeded', 'failed')`),
  ],
)

// ---------------------------------------------------------------------------------------
// Feeds: an agency's CRM export (Yandex.Realty XML), pulled on a schedule; one row per run,
// its problems offer by offer, and the feed's memory of the offers it brought in.

export const feedFormats = ['yandex_realty'] as const
export const feedRunStatuses = ['running', 'succeeded', 'partially_succeeded', 'failed', 'unchanged'] as const
export const feedRunTriggers = ['manual', 'schedule'] as const

export const feeds = pgTable(
  'feeds',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    tenantId: integer('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    format: text('format').notNull(),
    /** Minutes between scheduled runs (the API's `schedule`). */
    scheduleMinutes: integer('schedule_minutes').notNull().default(60),
    /** Whether a run may withdraw more than half of the feed's listings at once. */
    allowMassWithdrawal: boolean('allow_mass_withdrawal').notNull().default(false),
    /** The validators of the last imported file, sent back as If-None-Match / If-Modified-Since. */
    etag: text('etag'),
    lastModified: text('last_modified'),
    /** sha256 (hex) of the last imported file: the same bytes again are a run `unchanged`. */
    contentDigest: text('content_digest'),
    nextRunAt: timestamp('next_run_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    index('feeds_tenant_idx').on(t.tenantId, t.id),
    // The scheduler's queue: feeds due first.
    index('feeds_next_run_idx').on(t.nextRunAt),
    check('feeds_format_check', sql`${t.format} in ('yandex_realty')`),
    check('feeds_schedule_check', sql`${t.scheduleMinutes} between 15 and 10080`),
  ],
)

export const feedRuns = pgTable(
  'feed_runs',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    feedId: integer('feed_id')
      .notNull()
      .references(() => feeds.id, { onDelete: 'cascade' }),
    tenantId: integer('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    status: text('status').notNull().default('running'),
    trigger: text('trigger').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
    /** Why the run failed or stopped, in words the agency can act on. */
    detail: text('detail'),
    failureCode: text('failure_code'),
    offers: integer('offers').notNull().default(0),
    created: integer('created').notNull().default(0),
    updated: integer('updated').notNull().default(0),
    unchanged: integer('unchanged').notNull().default(0),
    withdrawn: integer('withdrawn').notNull().default(0),
    rejected: integer('rejected').notNull().default(0),
    errors: integer('errors').notNull().default(0),
    /** The worker running it, until lease_expires_at; renewed while it works. A lapsed lease is taken over. */
    leaseOwner: text('lease_owner'),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true, mode: 'date' }),
    /** How many times a worker took it: past 1, a worker before may have applied offers it had not recorded. */
    claims: integer('claims').notNull().default(0),
  },
  (t) => [
    index('feed_runs_feed_idx').on(t.feedId, t.id.desc()),
    // One run of a feed at a time, across every worker process.
    uniqueIndex('feed_runs_one_running_key')
      .on(t.feedId)
      .where(sql`${t.status} = 'running'`),
    // The workers' queue: running runs, by when their lease ends.
    index('feed_runs_running_idx')
      .on(t.leaseExpiresAt)
      .where(sql`${t.status} = 'running'`),
    check('feed_runs_status_check', sql`${t.status} in ('running', 'succeeded', 'partially_succeeded', 'failed', 'unchanged')`),
    check('feed_runs_trigger_check', sql`${t.trigger} in ('manual', 'schedule')`),
  ],
)

export const feedRunProblems = pgTable(
  'feed_run_problems',
  {
    runId: integer('run_id')
      .notNull()
      .references(() => feedRuns.id, { onDelete: 'cascade' }),
    /** Order of discovery within the run. */
    seq: integer('seq').notNull(),
    internalId: text('internal_id').notNull(),
    code: text('code').notNull(),
    field: text('field'),
    message: text('message').notNull(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.seq] })],
)

/** The feed's memory of its offers: which listing each internal-id became, and what it last said. */
export const feedOffers = pgTable(
  'feed_offers',
  {
    feedId: integer('feed_id')
      .notNull()
      .references(() => feeds.id, { onDelete: 'cascade' }),
    internalId: text('internal_id').notNull(),
    propertyId: integer('property_id')
      .notNull()
      .references(() => properties.id, { onDelete: 'cascade' }),
    /** sha256 of the offer as mapped (submission and photo URLs): equal means nothing to do. */
    contentDigest: text('content_digest').notNull(),
    /** The run that last submitted the offer's listing (created or changed it): its report shows the check's findings on it. */
    lastRunId: integer('last_run_id').notNull(),
    /** The feed withdrew the listing because the offer left the file; it is resubmitted when the offer returns. */
    withdrawnByFeed: boolean('withdrawn_by_feed').notNull().default(false),
  },
  (t) => [
    primaryKey({ columns: [t.feedId, t.internalId] }),
    index('feed_offers_property_idx').on(t.propertyId),
    index('feed_offers_last_run_idx').on(t.lastRunId),
  ],
)
