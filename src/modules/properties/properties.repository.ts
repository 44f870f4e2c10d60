import { and, asc, count, desc, eq, getTableColumns, inArray, isNotNull, isNull, ne, or, sql, type AnyColumn, type SQL } from 'drizzle-orm'
import type { CountryCode } from 'libphonenumber-js'
import { queryRows, type Database, type PipelinedDatabase } from '../../db/client.js'
import { rowsWithTotal } from '../../db/paging.js'
import { prepared, type PreparedStatement } from '../../db/prepared.js'
import {
  idempotencyKeys,
  owners,
  properties,
  propertyRevisions,
  tenants,
  type ModerationResult,
  type NewPropertyColumns,
  type PropertyRow,
  type RevisionFields,
  type RevisionRow,
  type RevisionStatus,
} from '../../db/schema.js'
import { ListingStatus } from './listing-status.js'
import type { OwnerView } from './properties.mapper.js'

export type { PropertyRow } from '../../db/schema.js'
export type NewProperty = NewPropertyColumns

/**
 * A property of one tenant with its owner and its revision, if any; another tenant's id finds
 * nothing. One statement, so one snapshot: read apart, an approval committing between the two
 * reads showed the approved version before the approval with no revision, a state it never had.
 */
export async function findPropertyWithOwner(
  db: Database,
  tenantId: number,
  id: number,
): Promise<{ property: PropertyRow; owner: OwnerView | null; revision: RevisionRow | null } | undefined> {
  const [row] = await db
    .select({ property: properties, owner: { id: owners.id, name: owners.name, phone: owners.phone, notes: owners.notes }, revision: propertyRevisions })
    .from(properties)
    .leftJoin(owners, eq(owners.id, properties.ownerId))
    .leftJoin(propertyRevisions, eq(propertyRevisions.propertyId, properties.id))
    .where(and(eq(properties.tenantId, tenantId), eq(properties.id, id)))
  return row
}

/** The id of the tenant's listing with this external id, if any. */
export async function findPropertyIdByExternalId(db: PipelinedDatabase, tenantId: number, externalId: string): Promise<number | undefined> {
  // Prepared: a feed's import asks once for each of its offers.
  const statement = prepared<{ id: number }[]>(db, 'property-id-by-external-id', (name) =>
    db
      .select({ id: properties.id })
      .from(properties)
      .where(and(eq(properties.tenantId, sql.placeholder('tenantId')), eq(properties.externalId, sql.placeholder('externalId'))))
      .prepare(name),
  )
  const [row] = await statement.execute({ tenantId, externalId })
  return row?.id
}

/** Locks the tenant's listing with this external id for a change. */
export async function lockPropertyByExternalId(db: Database, tenantId: number, externalId: string): Promise<PropertyRow | undefined> {
  const [row] = await db
    .select()
    .from(properties)
    .where(and(eq(properties.tenantId, tenantId), eq(properties.externalId, externalId)))
    .for('update')
  return row
}

/**
 * Sets or clears a listing's external id. Bookkeeping, not a change of the listing: its
 * `updated_at` stays, and nothing the catalogue shows moves (see migration 0023).
 */
export async function setExternalId(db: Database, tenantId: number, id: number, externalId: string | null): Promise<PropertyRow> {
  const [row] = await db
    .update(properties)
    .set({ externalId })
    .where(and(eq(properties.tenantId, tenantId), eq(properties.id, id)))
    .returning()
  return row!
}

/** Whether a database error is the unique index of external ids (another listing of the agency has it). */
export function isExternalIdTaken(error: unknown): boolean {
  const cause = ((error as { cause?: unknown }).cause ?? error) as { code?: unknown; constraint?: unknown }
  return cause.code === '23505' && cause.constraint === 'properties_tenant_external_id_key'
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

export interface OwnerSubmission {
  name: string
  phone: string
  /** Undefined keeps the notes an existing owner has. */
  notes: string | null | undefined
}

/**
 * An owner is one per phone within a tenant: a submission with a phone the tenant
 * already has updates that owner, keeping its notes when `keepNotes` (the submission did not
 * mention them).
 */
const upsertOwnerByPhone = (keepNotes: SQL) => ({
  target: [owners.tenantId, owners.phone],
  set: {
    name: sql`excluded.name`,
    notes: sql`case when ${keepNotes}::boolean then ${owners.notes} else excluded.notes end`,
    updatedAt: sql`now()`,
  },
})
const ownerColumns = { id: owners.id, name: owners.name, phone: owners.phone, notes: owners.notes }

/** What a submission sets of a new property; every other column takes its default. */
export const submittedColumnNames = [
  'tenantId',
  'propertyTypeId',
  'dealTypeId',
  'price',
  'description',
  'cityId',
  'districtId',
  'residentialComplexId',
  'address',
  'street',
  'houseNumber',
  'apartmentNumber',
  'latitude',
  'longitude',
  'attributes',
] as const satisfies readonly (keyof NewProperty)[]
export type SubmittedColumns = Pick<NewProperty, (typeof submittedColumnNames)[number]>
/** A submission's columns not given: the statement has a placeholder for each. */
const noSubmittedColumns = Object.fromEntries(submittedColumnNames.map((column) => [column, null]))

/**
 * Inserts a submitted property, waiting for the internal check, with its owner created or
 * updated by phone within the tenant, all in one statement: atomic without a
 * transaction of its own, and one round trip where BEGIN, two inserts and COMMIT were four.
 * The statement is built once per database (see prepared.ts).
 */
export async function insertSubmittedProperty(
  db: PipelinedDatabase,
  columns: SubmittedColumns,
  owner: OwnerSubmission | null,
  externalId: string | null,
): Promise<{ property: PropertyRow; owner: OwnerView | null }> {
  const [row] = await submissionStatement(db, owner, 'row').execute(submissionValues(columns, owner, externalId))
  const { owner: savedOwner, ...property } = row!
  return { property, owner: savedOwner }
}

/**
 * The same insert answering only the new listing's id and status: what a feed's import keeps,
 * without the driver and Drizzle reading back every column of a row thousands of times a run.
 */
export async function insertSubmittedPropertyId(
  db: PipelinedDatabase,
  columns: SubmittedColumns,
  owner: OwnerSubmission | null,
  externalId: string | null,
): Promise<{ id: number; statusId: number }> {
  const [row] = await submissionStatement(db, owner, 'id').execute(submissionValues(columns, owner, externalId))
  return row!
}

function submissionValues(columns: SubmittedColumns, owner: OwnerSubmission | null, externalId: string | null): Record<string, unknown> {
  return {
    ...noSubmittedColumns,
    ...columns,
    attributes: JSON.stringify(columns.attributes ?? {}),
    externalId,
    ...(owner && { ownerName: owner.name, ownerPhone: owner.phone, ownerNotes: owner.notes ?? null, keepOwnerNotes: owner.notes === undefined }),
  }
}

function submissionStatement(
  db: PipelinedDatabase,
  owner: OwnerSubmission | null,
  answer: 'row',
): PreparedStatement<(PropertyRow & { owner: OwnerView | null })[]>
function submissionStatement(db: PipelinedDatabase, owner: OwnerSubmission | null, answer: 'id'): PreparedStatement<{ id: number; statusId: number }[]>
function submissionStatement(db: PipelinedDatabase, owner: OwnerSubmission | null, answer: 'row' | 'id'): PreparedStatement<unknown> {
  return prepared(db, `submit:${owner ? 'owner' : 'no-owner'}:${answer}`, (name) => {
    // Bare placeholders, not the columns' encoders, which would send a null as the text "null".
    const placeholders = Object.fromEntries(submittedColumnNames.map((column) => [column, sql`${sql.placeholder(column)}`])) as Record<
      keyof SubmittedColumns,
      SQL
    >
    const newProperty = { ...placeholders, externalId: sql`${sql.placeholder('externalId')}`, reviewRequestedAt: sql`now()` }
    const idOnly = { id: properties.id, statusId: properties.statusId }
    if (!owner) {
      return db
        .insert(properties)
        .values(newProperty)
        .returning(answer === 'id' ? idOnly : { ...getTableColumns(properties), owner: sql<null>`null` })
        .prepare(name)
    }
    const upserted = db.$with('upserted_owner').as(
      db
        .insert(owners)
        .values({
          tenantId: sql.placeholder('tenantId'),
          name: sql.placeholder('ownerName'),
          phone: sql.placeholder('ownerPhone'),
          notes: sql.placeholder('ownerNotes'),
        })
        .onConflictDoUpdate(upsertOwnerByPhone(sql`${sql.placeholder('keepOwnerNotes')}`))
        .returning(ownerColumns),
    )
    return db
      .with(upserted)
      .insert(properties)
      .values({ ...newProperty, ownerId: sql`(select id from ${upserted})` })
      .returning(
        answer === 'id'
          ? idOnly
          : {
              ...getTableColumns(properties),
              owner: sql<OwnerView>`(select json_build_object('id', ${upserted.id}, 'name', ${upserted.name}, 'phone', ${upserted.phone}, 'notes', ${upserted.notes}) from ${upserted})`,
            },
      )
      .prepare(name)
  })
}

/** Changes one property of one tenant; its `updated_at` moves with every change. */
export async function updateProperty(db: Database, tenantId: number, id: number, values: Partial<NewProperty>): Promise<PropertyRow> {
  const [row] = await db
    .update(properties)
    .set({ ...values, updatedAt: sql`now()` })
    .where(and(eq(properties.tenantId, tenantId), eq(properties.id, id)))
    .returning()
  return row!
}

export async function findOwner(db: Database, tenantId: number, ownerId: number): Promise<OwnerView | undefined> {
  const [row] = await db
    .select(ownerColumns)
    .from(owners)
    .where(and(eq(owners.tenantId, tenantId), eq(owners.id, ownerId)))
  return row
}

export async function deleteProperty(db: Database, tenantId: number, id: number): Promise<boolean> {
  const deleted = await db
    .delete(properties)
    .where(and(eq(properties.tenantId, tenantId), eq(properties.id, id)))
    .returning({ id: properties.id })
  return deleted.length > 0
}

/** Creates the owner, or updates the one this tenant already has with that phone. */
export async function upsertOwner(db: Database, tenantId: number, owner: OwnerSubmission): Promise<OwnerView> {
  const [row] = await db
    .insert(owners)
    .values({ tenantId, name: owner.name, phone: owner.phone, notes: owner.notes ?? null })
    .onConflictDoUpdate(upsertOwnerByPhone(sql`${owner.notes === undefined}`))
    .returning(ownerColumns)
  return row!
}

export interface TenantListFilter {
  statusId?: number | undefined
  propertyTypeId?: number | undefined
  dealTypeId?: number | undefined
  cityId?: number | undefined
  limit: number
  offset: number
  /** By cursor: only the listings after this one, newest first (created_at to the microsecond, as a timestamp key). */
  after?: { createdAt: string; id: number } | undefined
}

/**
 * A column of the agency's view of a listing: its revision's value while it has one (see
 * property_revisions), else the row's. The revision keeps the submitted columns under their
 * names in RevisionFields; area and rooms come from its attributes, as the row's own copies do.
 */
const submitted = (column: SQL | AnyColumn, field: SQL, type: string) =>
  sql`(case when ${propertyRevisions.propertyId} is null then ${column} else (${field})::${sql.raw(type)} end)`
const submittedColumns = {
  propertyTypeId: submitted(properties.propertyTypeId, sql`${propertyRevisions.fields} ->> 'propertyTypeId'`, 'smallint').mapWith(Number),
  dealTypeId: submitted(properties.dealTypeId, sql`${propertyRevisions.fields} ->> 'dealTypeId'`, 'smallint').mapWith(Number),
  price: submitted(properties.price, sql`${propertyRevisions.fields} ->> 'price'`, 'numeric(15,2)').mapWith(Number),
  cityId: submitted(properties.cityId, sql`${propertyRevisions.fields} ->> 'cityId'`, 'integer').mapWith(Number),
  districtId: submitted(properties.districtId, sql`${propertyRevisions.fields} ->> 'districtId'`, 'integer').mapWith(Number),
  area: submitted(properties.area, sql`${propertyRevisions.fields} -> 'attributes' ->> 'area'`, 'numeric(12,2)').mapWith(Number),
  rooms: submitted(properties.rooms, sql`${propertyRevisions.fields} -> 'attributes' ->> 'rooms'`, 'integer').mapWith(Number),
}

/**
 * GET /properties: the tenant's own listings, newest first (properties_tenant_recent_idx), as
 * the agency sees them: a published listing with a revision shows, and is filtered by, the
 * revision's values. By cursor, a range of that index from the key `(created_at, id) < (…)`, so
 * any depth costs the same; the total is the filters' alone. `createdAtKey` is each row's time
 * as a cursor holds it.
 */
export async function listTenantProperties(db: Database, tenantId: number, filter: TenantListFilter) {
  const conditions: (SQL | undefined)[] = [
    eq(properties.tenantId, tenantId),
    filter.statusId === undefined ? undefined : eq(properties.statusId, filter.statusId),
    filter.propertyTypeId === undefined ? undefined : sql`${submittedColumns.propertyTypeId} = ${filter.propertyTypeId}`,
    filter.dealTypeId === undefined ? undefined : sql`${submittedColumns.dealTypeId} = ${filter.dealTypeId}`,
    filter.cityId === undefined ? undefined : sql`${submittedColumns.cityId} = ${filter.cityId}`,
  ]
  const where = and(...conditions)
  const withRevisions = eq(propertyRevisions.propertyId, properties.id)
  const after = filter.after && sql`(${properties.createdAt}, ${properties.id}) < (${filter.after.createdAt}::timestamptz, ${filter.after.id}::int)`
  const [rows, [counted]] = await Promise.all([
    db
      .select({
        id: properties.id,
        externalId: properties.externalId,
        statusId: properties.statusId,
        createdAt: properties.createdAt,
        createdAtKey: sql<string>`to_json(${properties.createdAt} at time zone 'UTC') #>> '{}'`,
        updatedAt: properties.updatedAt,
        ...submittedColumns,
      })
      .from(properties)
      .leftJoin(propertyRevisions, withRevisions)
      .where(and(where, after))
      .orderBy(desc(properties.createdAt), desc(properties.id))
      .limit(filter.limit)
      .offset(filter.offset),
    db.select({ total: count() }).from(properties).leftJoin(propertyRevisions, withRevisions).where(where),
  ])
  return { rows, total: counted?.total ?? 0 }
}

/**
 * Whether the tenant has another live listing that is the same offer: type, deal, city, area,
 * and the same place: the same address (as a person reads it, see spelledAddress), the same
 * street and house number, or the same coordinates. Two flats of one house are two offers: a
 * flat (its apartment number, or the one its address names) or a floor that both give and that
 * differ tells them apart. A published one always counts, whichever is older (an old listing
 * resubmitted or edited into a copy of a newer one is the duplicate); one on review counts only
 * if submitted earlier, so of two identical submissions checked in turn the first passes and the
 * second then meets it published (submitted: sent for review by its last change, whatever its
 * id). The database narrows the candidates to the agency's same offers; their places are
 * compared here, where case folding does not depend on the database's locale.
 */
export async function hasLiveDuplicate(db: Database, listing: PropertyRow): Promise<boolean> {
  const hasPlace = listing.latitude !== null && listing.longitude !== null
  const building = buildingOf(listing)
  if (listing.address === null && building === undefined && !hasPlace) return false
  const candidates = await db
    .select({
      address: properties.address,
      street: properties.street,
      houseNumber: properties.houseNumber,
      apartmentNumber: properties.apartmentNumber,
      floor: properties.floor,
      latitude: properties.latitude,
      longitude: properties.longitude,
    })
    .from(properties)
    .where(
      and(
        eq(properties.tenantId, listing.tenantId),
        ne(properties.id, listing.id),
        or(
          eq(properties.statusId, ListingStatus.Published),
          // Submitted for review earlier: its last change came first (an old listing resubmitted
          // or edited is as new as that change), in the database's own precision.
          and(
            eq(properties.statusId, ListingStatus.PendingReview),
            sql`(${properties.updatedAt}, ${properties.id}) < (select updated_at, id from ${properties} where id = ${listing.id})`,
          ),
        ),
        eq(properties.propertyTypeId, listing.propertyTypeId),
        eq(properties.dealTypeId, listing.dealTypeId),
        listing.cityId === null ? sql`${properties.cityId} is null` : eq(properties.cityId, listing.cityId),
        // Rounded as the column rounds it: a revision's area comes from its attributes as given.
        sql`${properties.area} is not distinct from ${listing.area}::numeric(12,2)`,
      ),
    )
  const address = listing.address === null ? undefined : spelledAddress(listing.address)
  const apartment = apartmentOf(listing)
  const bothGiveAndDiffer = <T>(mine: T | undefined | null, theirs: T | undefined | null) =>
    mine !== undefined && mine !== null && theirs !== undefined && theirs !== null && mine !== theirs
  return candidates.some(
    (candidate) =>
      !bothGiveAndDiffer(apartment, apartmentOf(candidate)) &&
      !bothGiveAndDiffer(listing.floor, candidate.floor) &&
      ((hasPlace && candidate.latitude === listing.latitude && candidate.longitude === listing.longitude) ||
        (address !== undefined && candidate.address !== null && spelledAddress(candidate.address) === address) ||
        (building !== undefined && buildingOf(candidate) === building)),
  )
}

/** The flat an address names: "кв. 12", "кв12", "квартира 12а", "apt. 5". */
const APARTMENT_IN_ADDRESS = /(?<!\p{L})(?:кв\.?|квартира|apt\.?|apartment)\s*№?\s*(\d[\p{L}\d/-]*)/iu

/** A listing's flat as a person reads it: its apartment number, or the one its address names; none without either. */
function apartmentOf({ apartmentNumber, address }: { apartmentNumber: string | null; address: string | null }): string | undefined {
  const named = apartmentNumber ?? (address === null ? undefined : APARTMENT_IN_ADDRESS.exec(address)?.[1])
  return named === undefined ? undefined : spelledAddress(named)
}

/** A listing's street and house number as one, each as a person reads it; none without both. */
const buildingOf = ({ street, houseNumber }: { street: string | null; houseNumber: string | null }) =>
  street === null || houseNumber === null ? undefined : `${spelledAddress(street)}\u0000${spelledAddress(houseNumber)}`

/**
 * An address as a person reads it: in any case, and however spaced: `ул.Ленина,д.2` is
 * `ул. Ленина, д. 2`. Blanks of every kind and invisible characters are left out.
 */
const spelledAddress = (address: string) => address.replace(/[\s\p{Cf}]+/gu, '').toLocaleLowerCase('ru')

// ---------------------------------------------------------------------------------------
// The internal check and operators' decisions, across tenants.

/**
 * Up to `limit` listings waiting for the internal check (new submissions, and published
 * listings with a revision), oldest first, with their agency's country, locked for this transaction. FOR UPDATE SKIP LOCKED: several workers share the
 * queue without checking one listing twice. Listings of suspended agencies wait.
 */
export async function claimAwaitingCheck(tx: Database, limit: number): Promise<{ listing: PropertyRow; country: CountryCode }[]> {
  const rows = await tx
    .select({ listing: properties, country: tenants.country })
    .from(properties)
    .innerJoin(tenants, eq(tenants.id, properties.tenantId))
    .where(
      and(
        isNotNull(properties.reviewRequestedAt),
        // A published listing waits with a revision (see property_revisions).
        inArray(properties.statusId, [ListingStatus.PendingReview, ListingStatus.Published]),
        isNull(tenants.suspendedAt),
      ),
    )
    .orderBy(asc(properties.reviewRequestedAt))
    .limit(limit)
    .for('update', { of: properties, skipLocked: true })
  return rows.map((row) => ({ listing: row.listing, country: row.country as CountryCode }))
}

/** The phones of owners by id, for the internal check to look for in descriptions. */
export async function findOwnerPhones(tx: Database, ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map()
  const rows = await tx.select({ id: owners.id, phone: owners.phone }).from(owners).where(inArray(owners.id, ids))
  return new Map(rows.map((row) => [row.id, row.phone]))
}

/** What the contacts rule reads beside a listing's description: its agency's country and its owner's phone. */
export async function findContactFacts(tx: Database, listing: PropertyRow): Promise<{ country: CountryCode; ownerPhone: string | null }> {
  const [row] = await tx.select({ country: tenants.country }).from(tenants).where(eq(tenants.id, listing.tenantId))
  const phones = await findOwnerPhones(tx, listing.ownerId === null ? [] : [listing.ownerId])
  return { country: row!.country as CountryCode, ownerPhone: (listing.ownerId !== null && phones.get(listing.ownerId)) || null }
}

/** Any agency's listing, locked for an operator's decision. */
export async function lockAnyTenantsProperty(tx: Database, id: number): Promise<PropertyRow | undefined> {
  const [row] = await tx.select().from(properties).where(eq(properties.id, id)).for('update')
  return row
}

/**
 * Records the check's findings on a listing and that it no longer waits for the check; with a
 * decision, its new status too (and, when published, the time). Findings alone (manual mode)
 * are not a change of the listing: its `updated_at` stays.
 */
export async function recordDecision(
  tx: Database,
  tenantId: number,
  id: number,
  decision: { moderation: ModerationResult; statusId?: number; published?: boolean },
): Promise<PropertyRow> {
  const [row] = await tx
    .update(properties)
    .set({
      moderation: decision.moderation,
      reviewRequestedAt: null,
      ...(decision.statusId === undefined ? {} : { statusId: decision.statusId, updatedAt: sql`now()` }),
      ...(decision.published ? { publishedAt: sql`now()` } : {}),
    })
    .where(and(eq(properties.tenantId, tenantId), eq(properties.id, id)))
    .returning()
  return row!
}

/**
 * A published listing's revision has been checked (its findings are on the revision): the
 * listing no longer waits for the check. Nothing the agency sees of it changes (`updated_at` stays).
 */
export async function recordRevisionChecked(tx: Database, tenantId: number, id: number): Promise<void> {
  await tx
    .update(properties)
    .set({ reviewRequestedAt: null })
    .where(and(eq(properties.tenantId, tenantId), eq(properties.id, id)))
}

/**
 * An agency's suspension: its published listings are withdrawn, out of the catalogue, and
 * remember that they were published. Nothing the agency sees changes (`updated_at` stays), so
 * giving them back leaves them as they were.
 */
export function holdPublishedListings(tx: Database, tenantId: number): Promise<PropertyRow[]> {
  return tx
    .update(properties)
    .set({ statusId: ListingStatus.Withdrawn, heldStatusId: ListingStatus.Published })
    .where(and(eq(properties.tenantId, tenantId), eq(properties.statusId, ListingStatus.Published)))
    .returning()
}

/** The end of a suspension: listings held by it get their status back. */
export function releaseHeldListings(tx: Database, tenantId: number): Promise<PropertyRow[]> {
  return tx
    .update(properties)
    .set({ statusId: sql`${properties.heldStatusId}`, heldStatusId: null })
    .where(and(eq(properties.tenantId, tenantId), isNotNull(properties.heldStatusId)))
    .returning()
}

/**
 * Listings of every agency in one status, oldest change first, for operators; by revision, the
 * oldest revision first (an edit of the listing outside it, say its owner's name, is not one).
 */
export function listByStatus(db: Database, statusId: number, page: { limit: number; offset: number }, revision?: RevisionStatus) {
  const where = and(
    eq(properties.statusId, statusId),
    revision === undefined
      ? undefined
      : sql`exists (select 1 from ${propertyRevisions} where ${propertyRevisions.propertyId} = ${properties.id} and ${propertyRevisions.status} = ${revision})`,
  )
  const changedAt =
    revision === undefined
      ? properties.updatedAt
      : sql`(select ${propertyRevisions.submittedAt} from ${propertyRevisions} where ${propertyRevisions.propertyId} = ${properties.id})`
  // Each listing with its revision in one statement: read apart, a revision decided meanwhile
  // left its listing in the list without it.
  const rows = db
    .select({ listing: properties, revision: propertyRevisions })
    .from(properties)
    .leftJoin(propertyRevisions, eq(propertyRevisions.propertyId, properties.id))
    .where(where)
    .orderBy(asc(changedAt), asc(properties.id))
    .limit(page.limit)
    .offset(page.offset)
  return rowsWithTotal(db, rows, properties, where)
}

// ---------------------------------------------------------------------------------------
// Revisions: changes to published listings, checked while the approved version stays in the catalogue.

export type { RevisionRow }

export async function findRevision(db: PipelinedDatabase, tenantId: number, propertyId: number): Promise<RevisionRow | undefined> {
  const [row] = await db
    .select()
    .from(propertyRevisions)
    .where(and(eq(propertyRevisions.tenantId, tenantId), eq(propertyRevisions.propertyId, propertyId)))
  return row
}

/** The revisions of some listings (a claimed batch of the check), by listing id. */
export async function findRevisions(db: Database, propertyIds: number[]): Promise<Map<number, RevisionRow>> {
  if (propertyIds.length === 0) return new Map()
  const rows = await db.select().from(propertyRevisions).where(inArray(propertyRevisions.propertyId, propertyIds))
  return new Map(rows.map((row) => [row.propertyId, row]))
}

/** Submits a revision: waiting for the check, replacing any earlier one of the listing. */
export async function saveRevision(db: Database, tenantId: number, propertyId: number, fields: RevisionFields): Promise<RevisionRow> {
  const [row] = await db
    .insert(propertyRevisions)
    .values({ propertyId, tenantId, fields, status: 'pending_review', moderation: null })
    .onConflictDoUpdate({
      target: propertyRevisions.propertyId,
      set: { fields, status: 'pending_review', moderation: null, submittedAt: sql`now()` },
    })
    .returning()
  return row!
}

/** The check's findings on a revision; with `rejected`, its decision too. */
export async function recordRevisionFindings(db: Database, propertyId: number, moderation: ModerationResult, rejected: boolean): Promise<void> {
  await db
    .update(propertyRevisions)
    .set({ moderation, ...(rejected ? { status: 'rejected' as const } : {}) })
    .where(eq(propertyRevisions.propertyId, propertyId))
}

export async function deleteRevision(db: Database, propertyId: number): Promise<boolean> {
  const deleted = await db.delete(propertyRevisions).where(eq(propertyRevisions.propertyId, propertyId)).returning({ id: propertyRevisions.propertyId })
  return deleted.length > 0
}

// ---------------------------------------------------------------------------------------
// Idempotency-Key on POST /properties.

/**
 * Takes a transaction-scoped advisory lock for one tenant's key, without waiting: false
 * means another request with this key is in flight right now. The lock is released at
 * commit or rollback, so a crash never leaves a key stuck.
 */
export async function tryLockIdempotencyKey(db: Database, tenantId: number, key: string): Promise<boolean> {
  const [row] = await queryRows<{ locked: boolean }>(db, sql`select pg_try_advisory_xact_lock(hashtextextended(${`${tenantId}:${key}`}, 0)) as locked`)
  return row?.locked ?? false
}

/** The stored response for this key, if it is younger than 24 hours. */
export async function findIdempotencyKey(db: Database, tenantId: number, key: string) {
  const [row] = await db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.tenantId, tenantId), eq(idempotencyKeys.key, key), sql`${idempotencyKeys.createdAt} > now() - interval '24 hours'`))
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

/**
 * Housekeeping: deletes up to `limit` keys past their 24 hours, oldest first, which are never
 * replayed again; how many. Rows another sweep holds are skipped.
 */
export async function deleteExpiredIdempotencyKeys(db: Database, limit: number): Promise<number> {
  const [row] = await queryRows<{ deleted: number }>(
    db,
    sql`with expired as (
          select tenant_id, key from idempotency_keys
          where created_at < now() - interval '24 hours'
          order by created_at
          limit ${limit}::int
          for update skip locked
        ),
        deleted as (
          delete from idempotency_keys k using expired
          where k.tenant_id = expired.tenant_id and k.key = expired.key
          returning 1
        )
        select count(*)::int as deleted from deleted`,
  )
  return row?.deleted ?? 0
}
