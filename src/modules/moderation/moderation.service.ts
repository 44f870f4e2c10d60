import { and, asc, count, desc, eq, isNotNull, sql } from 'drizzle-orm'
import type { CountryCode } from 'libphonenumber-js'
import type { Database } from '../../db/client.js'
import { PENDING_REVIEW, properties, PUBLISHED, tenants, type ModerationReason, type ModerationResult, type PropertyRow } from '../../db/schema.js'
import { seedPropertyTypes } from '../../db/seed/dictionaries.js'
import { ApiError, PROPERTY_NOT_FOUND } from '../../lib/errors.js'
import { toOffsetTimestamp } from '../../lib/time.js'
import { findCatalogueItem } from '../catalogue/catalogue.repository.js'
import { recordEvent } from '../events/events.repository.js'
import { hasLiveDuplicate } from '../properties/properties.repository.js'
import type { PropertyTypeName } from '../reference/attribute-catalogue.js'
import { referenceNamesFor, type ReferenceNames } from '../reference/reference-names.js'
import { checkListing } from './rules.js'

const REJECTED = 3
const propertyTypeNames = new Map<number, PropertyTypeName>(seedPropertyTypes.map((type) => [type.id, type.name]))

/**
 * The internal check (D5): the worker runs the rules on listings waiting for review and, in
 * `auto` mode, publishes or rejects them; in `manual` mode it records its findings and an
 * operator decides. Publication writes its events in the same transaction.
 */
export class ModerationService {
  private readonly names: ReferenceNames

  constructor(
    private readonly db: Database,
    private readonly mode: 'auto' | 'manual',
    /** The base of photo URLs, for the thumbnail in `mls.new_listing`. */
    private readonly mediaBase: string,
  ) {
    this.names = referenceNamesFor(db)
  }

  /**
   * Checks up to `batchSize` waiting listings, oldest first. Rows are claimed with
   * FOR UPDATE SKIP LOCKED, so several workers share the queue without checking one twice.
   */
  async checkWaiting(batchSize = 25): Promise<number> {
    return this.db.transaction(async (tx) => {
      const waiting = await tx
        .select({ listing: properties, country: tenants.country })
        .from(properties)
        .innerJoin(tenants, eq(tenants.id, properties.tenantId))
        .where(and(isNotNull(properties.reviewRequestedAt), eq(properties.statusId, PENDING_REVIEW)))
        .orderBy(asc(properties.reviewRequestedAt))
        .limit(batchSize)
        .for('update', { of: properties, skipLocked: true })
      for (const { listing, country } of waiting) {
        const reasons = checkListing({
          listing,
          propertyType: propertyTypeNames.get(listing.propertyTypeId)!,
          country: country as CountryCode,
          hasDuplicate: await hasLiveDuplicate(tx, listing),
        })
        if (this.mode === 'manual') {
          await tx
            .update(properties)
            .set({ moderation: result(reasons), reviewRequestedAt: null })
            .where(eq(properties.id, listing.id))
        } else if (reasons.length === 0) {
          await publish(tx, listing, this.names, this.mediaBase)
        } else {
          await reject(tx, listing, reasons, this.names)
        }
      }
      return waiting.length
    })
  }

  /** An operator publishes a listing waiting for review (manual mode, or overruling the check). */
  async approve(id: number): Promise<void> {
    await this.db.transaction(async (tx) => publish(tx, await this.lockWaiting(tx, id), this.names, this.mediaBase))
  }

  /** An operator rejects a waiting listing; the check's findings are kept beside the reason. */
  async reject(id: number, reason: string | undefined): Promise<void> {
    await this.db.transaction(async (tx) => {
      const listing = await this.lockWaiting(tx, id)
      const findings = listing.moderation?.reasons ?? []
      await reject(
        tx,
        listing,
        [...findings, { code: 'rejected_by_moderator', field: null, message: reason?.trim() || 'Rejected by a moderator.' }],
        this.names,
      )
    })
  }

  /** Listings in one status across all tenants, oldest waiting first, with the check's findings. */
  async list(statusId: number, limit: number, offset: number) {
    const where = eq(properties.statusId, statusId)
    const [rows, [totals]] = await Promise.all([
      this.db.select().from(properties).where(where).orderBy(asc(properties.updatedAt), desc(properties.id)).limit(limit).offset(offset),
      this.db.select({ total: count() }).from(properties).where(where),
    ])
    return {
      items: rows.map((row) => ({
        id: row.id,
        tenant_id: row.tenantId,
        status_id: row.statusId,
        property_type_id: row.propertyTypeId,
        deal_type_id: row.dealTypeId,
        price: row.price,
        city_id: row.cityId,
        description: row.description,
        attributes: row.attributes,
        moderation: row.moderation,
        waiting_for_check: row.reviewRequestedAt !== null,
        updated_at: toOffsetTimestamp(row.updatedAt),
      })),
      total: totals?.total ?? 0,
      limit,
      offset,
    }
  }

  private async lockWaiting(tx: Database, id: number): Promise<PropertyRow> {
    const [listing] = await tx.select().from(properties).where(eq(properties.id, id)).for('update')
    if (!listing) throw ApiError.notFound(PROPERTY_NOT_FOUND)
    if (listing.statusId !== PENDING_REVIEW) {
      throw ApiError.conflict(`Only a listing waiting for review (status 1) can be decided; this one is in status ${listing.statusId}.`)
    }
    return listing
  }
}

function result(reasons: ModerationReason[]): ModerationResult {
  return { checked_at: toOffsetTimestamp(new Date()), reasons }
}

/** Publishes the listing and announces it: `mls.new_listing` to the MLS, `property.published` to its agency. */
async function publish(tx: Database, listing: PropertyRow, names: ReferenceNames, mediaBase: string): Promise<void> {
  const [published] = await tx
    .update(properties)
    .set({ statusId: PUBLISHED, publishedAt: sql`now()`, moderation: result([]), reviewRequestedAt: null, updatedAt: sql`now()` })
    .where(eq(properties.id, listing.id))
    .returning({ publishedAt: properties.publishedAt })
  const item = await findCatalogueItem(tx, listing.id, mediaBase, names)
  await recordEvent(tx, { type: 'mls.new_listing', tenantId: listing.tenantId, data: item })
  await recordEvent(tx, {
    type: 'property.published',
    tenantId: listing.tenantId,
    data: {
      property_id: listing.id,
      status_id: PUBLISHED,
      status_name: names.statuses.get(PUBLISHED)!,
      published_at: toOffsetTimestamp(published!.publishedAt!),
      listing: item,
    },
  })
}

async function reject(tx: Database, listing: PropertyRow, reasons: ModerationReason[], names: ReferenceNames): Promise<void> {
  await tx
    .update(properties)
    .set({ statusId: REJECTED, moderation: result(reasons), reviewRequestedAt: null, updatedAt: sql`now()` })
    .where(eq(properties.id, listing.id))
  await recordEvent(tx, {
    type: 'property.rejected',
    tenantId: listing.tenantId,
    data: { property_id: listing.id, status_id: REJECTED, status_name: names.statuses.get(REJECTED)!, reasons },
  })
}
