import type { CountryCode } from 'libphonenumber-js'
import stringify from 'safe-stable-stringify'
import type { Database, PipelinedDatabase } from '../../db/client.js'
import type { AttributeValues, ModerationResult, NewPropertyColumns, PropertyRow, RevisionStatus } from '../../db/schema.js'
import { seedDealTypes, seedPropertyTypes } from '../../db/seed/dictionaries.js'
import { unpairedCoordinate } from '../../lib/coordinates.js'
import { decodeCursor, encodeCursor, idKey, refuseOffsetWithCursor, timestampKey, timestampKeyFromUtc } from '../../lib/cursor.js'
import { ApiError, DEAL_CLOSED, HELD_BY_SUSPENSION, PROPERTY_NOT_FOUND, type FieldError } from '../../lib/errors.js'
import { normalisePhone } from '../../lib/phone.js'
import { digestSecret } from '../../lib/secrets.js'
import { trimmedText } from '../../lib/text.js'
import { toOffsetTimestamp } from '../../lib/time.js'
import type { CatalogueAnnouncements } from '../catalogue/catalogue-announcements.js'
import type { ImagesService } from '../images/images.service.js'
import type { PropertyImage } from '../images/images.schemas.js'
import { attributesByName } from '../reference/attribute-catalogue.js'
import type { ReferenceNames } from '../reference/reference-names.js'
import type { AuthenticatedTenant } from '../tenants/tenants.service.js'
import { parseAttributes } from './attributes.js'
import {
  agencyMovesFrom,
  awaitsCheck,
  canBeDecided,
  canBeEdited,
  feedMovesFrom,
  isPublishedOrHeld,
  ListingStatus,
  STATUS_AFTER_EDIT,
} from './listing-status.js'
import { toProperty, type OwnerView } from './properties.mapper.js'
import * as repository from './properties.repository.js'
import type { RevisionRow } from './properties.repository.js'
import { fieldsOf, sameFields, withRevision } from './revisions.js'
import {
  EXTERNAL_ID_MAX_LENGTH,
  EXTERNAL_ID_RULE,
  externalIdPattern,
  type NewPropertySubmission,
  type Property,
  type PropertyListItem,
  type PropertyListQuery,
  type PropertyPatch,
  type PropertySubmission,
} from './properties.schemas.js'

export type { PropertyRow } from '../../db/schema.js'

const propertyTypeIds = new Map<string, number>(seedPropertyTypes.map((type) => [type.name, type.id]))
const dealTypeIds = new Map<string, number>(seedDealTypes.map((type) => [type.name, type.id]))

/**
 * A listing before the check or an operator: as its agency submitted it (with a revision, as
 * the revision makes it), and the revision when it is a published listing's change.
 */
export interface UnderCheck {
  listing: PropertyRow
  /** The listing's row: with a revision, the approved version the catalogue shows. */
  approved: PropertyRow
  revision: RevisionRow | undefined
}

const underCheck = (row: PropertyRow, revision: RevisionRow | undefined): UnderCheck => ({
  listing: revision ? withRevision(row, revision.fields) : row,
  approved: row,
  revision,
})

export interface CreateResult {
  body: Property
  replayed: boolean
}

/**
 * A coordinate as its column keeps it, numeric(9,6): rounded here, so what is stored is what a
 * later PATCH compares with (a map widget's 55.7558264 is stored and compared as 55.755826).
 */
function toCoordinate(value: number | string): number {
  return Math.round(Number(value) * 1e6) / 1e6
}

type ResolvedFields = Awaited<ReturnType<PropertiesService['resolve']>>

const identity = <T>(value: T): T => value

export const EXTERNAL_ID_NOT_FOUND = 'Your agency has no listing with this external_id.'

/** A 409 for an external id another listing of the agency has; other errors as they are. */
function externalIdConflict(error: unknown, externalId: string | null | undefined): unknown {
  if (!repository.isExternalIdTaken(error)) return error
  return ApiError.conflict(
    `Another listing of your agency already has external_id "${externalId}" (see GET /properties/by-external-id/${encodeURIComponent(externalId ?? '')}).`,
  )
}

/**
 * An external id that reaches the service without a route's schema (a feed's internal-id): the
 * same rule, the same answer.
 */
function checkExternalId(externalId: string): void {
  if ([...externalId].length <= EXTERNAL_ID_MAX_LENGTH && externalIdPattern.test(externalId)) return
  throw ApiError.validation([{ loc: ['path', 'external_id'], msg: EXTERNAL_ID_RULE }])
}

/**
 * A change of a listing's content: a PATCH's fields (undefined: unchanged), or a PUT's (all of
 * them, null where not sent), the attributes it is to have from the ones it has, and its
 * external id (undefined: unchanged).
 */
interface ListingChange {
  content: Pick<PropertyPatch, 'property_type' | 'deal_type' | 'price' | 'owner' | 'location' | 'description'>
  attributes: (current: AttributeValues) => Record<string, unknown>
  externalId?: string | null | undefined
}

/**
 * Whether a resolved PATCH would store what is already stored: every column it sets, the
 * description, and the owner (its phone, name, and notes when sent).
 */
function changesNothing(current: PropertyRow, owner: OwnerView | null, resolved: ResolvedFields, description: string | null | undefined): boolean {
  const stored = current as unknown as Record<string, unknown>
  // Canonical JSON: attributes compare by content whatever their keys' order.
  if (Object.entries(resolved.columns).some(([column, value]) => stringify(stored[column]) !== stringify(value))) return false
  if (description !== undefined && description !== current.description) return false
  if (resolved.owner === undefined) return true
  if (resolved.owner === null || owner === null) return resolved.owner === null && owner === null
  return (
    owner.phone === resolved.owner.phone && owner.name === resolved.owner.name && (resolved.owner.notes === undefined || resolved.owner.notes === owner.notes)
  )
}

/**
 * Listings: an agency's submissions, list, changes and status moves, and the decisions of the
 * internal check and operators, all by the one lifecycle of listing-status.ts. The only writer
 * of properties, owners and idempotency keys. See docs/api.md#listing-statuses.
 */
export class PropertiesService {
  constructor(
    private readonly db: Database,
    /**
     * For statements that stand alone (a submission without an Idempotency-Key is one insert):
     * on PostgreSQL pipelined, many in one write and run back to back (db/pipelines.ts), so an
     * import of thousands of offers costs a system call and a round trip far less than one each.
     */
    private readonly pipelined: PipelinedDatabase,
    /** Photos are shown with their property and deleted with it. */
    private readonly images: ImagesService,
    private readonly names: ReferenceNames,
    /** Changes of what the catalogue shows, announced in the transaction that makes them. */
    private readonly announce: CatalogueAnnouncements,
  ) {}

  /**
   * Submits a property. With an Idempotency-Key the whole request, its stored response
   * included, is one transaction: a crash leaves nothing behind, a retry replays.
   */
  async create(tenant: AuthenticatedTenant, body: NewPropertySubmission, idempotencyKey: string | undefined): Promise<CreateResult> {
    try {
      return await this.createOnce(tenant, body, idempotencyKey)
    } catch (error) {
      throw externalIdConflict(error, body.external_id)
    }
  }

  private async createOnce(
    tenant: AuthenticatedTenant,
    { external_id, ...body }: NewPropertySubmission,
    idempotencyKey: string | undefined,
  ): Promise<CreateResult> {
    const externalId = external_id ?? null
    // One statement (see insertSubmittedProperty): atomic without a transaction.
    if (idempotencyKey === undefined) return { body: await this.insert(this.pipelined, tenant, body, externalId), replayed: false }
    // The digest of the request as sent: an external id is part of it.
    const requestDigest = digestSecret(stringify(external_id === undefined ? body : { ...body, external_id }) ?? '')
    return this.db.transaction(async (tx) => {
      if (!(await repository.tryLockIdempotencyKey(tx, tenant.id, idempotencyKey))) {
        throw ApiError.conflict('A request with this Idempotency-Key is still being processed; retry it shortly.')
      }
      const earlier = await repository.findIdempotencyKey(tx, tenant.id, idempotencyKey)
      if (earlier) {
        if (earlier.requestDigest !== requestDigest) {
          throw ApiError.validation(
            [{ loc: ['header', 'idempotency-key'], msg: 'was already used with a different request body' }],
            'This Idempotency-Key was already used with a different request body; use a new key for a new request.',
          )
        }
        return { body: earlier.responseBody as Property, replayed: true }
      }
      const created = await this.insert(tx, tenant, body, externalId)
      await repository.saveIdempotencyKey(tx, {
        tenantId: tenant.id,
        key: idempotencyKey,
        requestDigest,
        responseStatus: 201,
        responseBody: created,
      })
      return { body: created, replayed: false }
    })
  }

  /**
   * PUT /properties/by-external-id/{external_id}: creates the agency's listing with this id
   * (`created`), or replaces the whole of it as a PATCH of every field would, fields not sent
   * becoming null or empty (attributes replaced, not merged). `changed` is false when the
   * replacement stores nothing new: the listing, its status and the check are left as they were.
   */
  async putByExternalId(
    tenant: AuthenticatedTenant,
    externalId: string,
    body: PropertySubmission,
  ): Promise<{ created: boolean; changed: boolean; property: Property }> {
    const { listing: property, ...outcome } = await this.createOrReplace(
      tenant,
      externalId,
      body,
      false,
      (db) => this.insert(db, tenant, body, externalId),
      identity,
    )
    return { ...outcome, property }
  }

  /**
   * A feed's offer, as putByExternalId takes it, answering only what the import keeps: the
   * listing's id and status. `probablyNew` (an offer the feed has never imported) tries the
   * insert without looking for the id first; a new listing's insert answers two columns, not
   * its whole row and view.
   */
  async importByExternalId(
    tenant: AuthenticatedTenant,
    externalId: string,
    body: PropertySubmission,
    probablyNew: boolean,
  ): Promise<{ created: boolean; changed: boolean; id: number; statusId: number }> {
    const created = async (db: PipelinedDatabase) => {
      const resolved = await this.resolve(db, tenant, { ...body, attributes: body.attributes ?? {} })
      return repository.insertSubmittedPropertyId(db, this.newColumns(tenant, body, resolved), resolved.owner ?? null, externalId)
    }
    const { listing, ...outcome } = await this.createOrReplace(tenant, externalId, body, probablyNew, created, (property) => ({
      id: property.id,
      statusId: property.status_id,
    }))
    return { ...outcome, ...listing }
  }

  /**
   * Creates the agency's listing with this external id, or replaces it (see putByExternalId).
   * A new id is one statement outside a transaction, on the pipelined connections, whose
   * prepared insert is built once per process (inside a transaction it is built again for each
   * listing). A listing with this id, made meanwhile or missed by `probablyNew`'s guess, makes it
   * fail on the unique index, and the next attempt looks for it first and replaces it.
   */
  private async createOrReplace<T>(
    tenant: AuthenticatedTenant,
    externalId: string,
    body: PropertySubmission,
    probablyNew: boolean,
    create: (db: PipelinedDatabase) => Promise<T>,
    fromView: (property: Property) => T,
  ): Promise<{ created: boolean; changed: boolean; listing: T }> {
    checkExternalId(externalId)
    for (let attempt = 1; ; attempt++) {
      try {
        const isNew = (probablyNew && attempt === 1) || (await repository.findPropertyIdByExternalId(this.pipelined, tenant.id, externalId)) === undefined
        if (isNew) return { created: true, changed: true, listing: await create(this.pipelined) }
        return await this.db.transaction(async (tx) => {
          const approved = await repository.lockPropertyByExternalId(tx, tenant.id, externalId)
          // Deleted since it was looked for.
          if (!approved) return { created: true, changed: true, listing: await create(tx) }
          const { property, changed } = await this.change(tx, tenant, approved, {
            content: {
              property_type: body.property_type,
              deal_type: body.deal_type,
              price: body.price ?? null,
              description: body.description ?? null,
              owner: body.owner ?? null,
              location: body.location ?? null,
            },
            attributes: () => ({ ...body.attributes }),
          })
          return { created: false, changed, listing: fromView(property) }
        })
      } catch (error) {
        if (attempt < 3 && repository.isExternalIdTaken(error)) continue
        throw error
      }
    }
  }

  /** The agency's listing with this external id, as GET /properties/{id} shows it. */
  async getByExternalId(tenantId: number, externalId: string): Promise<Property> {
    const id = await repository.findPropertyIdByExternalId(this.db, tenantId, externalId)
    if (id === undefined) throw ApiError.notFound(EXTERNAL_ID_NOT_FOUND)
    return this.get(tenantId, id)
  }

  /** Deletes the agency's listing with this external id, as DELETE /properties/{id} does. */
  async removeByExternalId(tenantId: number, externalId: string): Promise<void> {
    await this.removeLocked((tx) => repository.lockPropertyByExternalId(tx, tenantId, externalId), EXTERNAL_ID_NOT_FOUND)
  }

  async get(tenantId: number, id: number): Promise<Property> {
    const found = await repository.findPropertyWithOwner(this.db, tenantId, id)
    if (!found) throw ApiError.notFound(PROPERTY_NOT_FOUND)
    const { revision } = found
    if (!revision) return this.view(found.property, found.owner, this.db, undefined, null)
    const submitted = withRevision(found.property, revision.fields)
    const owner = submitted.ownerId === found.property.ownerId ? found.owner : await this.ownerOf(this.db, submitted)
    return this.view(submitted, owner, this.db, undefined, revision)
  }

  /**
   * A page of the agency's listings, newest first, at `offset` or after the listing `cursor`
   * ends on. The cursor holds `[created_at, id]` of that listing and is bound to the filters; it
   * is a position in time, so with another agency's key it reads this agency's own listings
   * after that point, never the other's.
   */
  async list(
    tenantId: number,
    query: PropertyListQuery,
  ): Promise<{ items: PropertyListItem[]; total: number; limit: number; offset: number; next_cursor: string | null }> {
    refuseOffsetWithCursor(query.cursor, query.offset)
    const binding = { sort: 'created_desc', filters: [query.status_id, query.property_type, query.deal_type, query.city_id] }
    const after =
      query.cursor === undefined
        ? undefined
        : decodeCursor(query.cursor, binding, ([createdAt, id, ...rest]) => {
            const time = timestampKey(createdAt)
            const afterId = idKey(id)
            return time !== undefined && afterId !== undefined && rest.length === 0 ? { createdAt: time, id: afterId } : undefined
          })
    // One row more than the page shows: whether there is a next page.
    const { rows: read, total } = await repository.listTenantProperties(this.db, tenantId, {
      statusId: query.status_id,
      propertyTypeId: query.property_type === undefined ? undefined : propertyTypeIds.get(query.property_type),
      dealTypeId: query.deal_type === undefined ? undefined : dealTypeIds.get(query.deal_type),
      cityId: query.city_id,
      limit: query.limit + 1,
      offset: query.offset,
      after,
    })
    const rows = read.slice(0, query.limit)
    const last = rows.at(-1)
    const next_cursor = read.length > query.limit && last ? encodeCursor(binding, [timestampKeyFromUtc(last.createdAtKey), last.id]) : null
    await this.names.ensure({ cityIds: rows.map((row) => row.cityId), districtIds: rows.map((row) => row.districtId) })
    return {
      items: rows.map((row) => ({
        id: row.id,
        external_id: row.externalId,
        property_type: this.names.propertyTypes.get(row.propertyTypeId)!,
        deal_type: this.names.dealTypes.get(row.dealTypeId)!,
        price: row.price,
        status_id: row.statusId,
        status_name: this.names.statuses.get(row.statusId)!,
        city: this.names.ref('city', row.cityId),
        district: this.names.ref('district', row.districtId),
        area: row.area,
        rooms: row.rooms,
        created_at: toOffsetTimestamp(row.createdAt),
        updated_at: toOffsetTimestamp(row.updatedAt),
      })),
      total,
      limit: query.limit,
      offset: query.offset,
      next_cursor,
    }
  }

  /**
   * PATCH: a changed submission goes back through the internal check. A published listing stays
   * published meanwhile: the change is kept as its revision (see revisions.ts) and the catalogue
   * goes on showing the approved version until the check passes the revision.
   */
  async update(tenant: AuthenticatedTenant, id: number, { external_id, ...patch }: PropertyPatch): Promise<Property> {
    try {
      return await this.db.transaction(async (tx) => {
        const approved = await repository.lockProperty(tx, tenant.id, id)
        if (!approved) throw ApiError.notFound(PROPERTY_NOT_FOUND)
        const change = await this.change(tx, tenant, approved, {
          content: patch,
          attributes: (current) => {
            const attributes: Record<string, unknown> = { ...current }
            for (const [name, value] of Object.entries(patch.attributes ?? {})) {
              // An unknown name stays, null and all, for the attributes' check to name it (a typo
              // in a removal must not answer 200 and leave the attribute meant).
              if (value === null && attributesByName.has(name)) delete attributes[name]
              else attributes[name] = value
            }
            return attributes
          },
          externalId: external_id,
        })
        return change.property
      })
    } catch (error) {
      throw externalIdConflict(error, external_id)
    }
  }

  /**
   * A change of a locked listing (`approved`, its row): a changed submission goes back through
   * the internal check (a published listing's as its revision, see revisions.ts); one that
   * changes nothing leaves the listing as it is, published in the catalogue. An external id is
   * bookkeeping: set on the row whatever the status, never checked, never part of a revision.
   */
  private async change(
    tx: Database,
    tenant: AuthenticatedTenant,
    approved: PropertyRow,
    change: ListingChange,
  ): Promise<{ property: Property; changed: boolean }> {
    const id = approved.id
    const revision = isPublishedOrHeld(approved) ? await repository.findRevision(tx, tenant.id, id) : undefined
    // What the agency sees now, and edits.
    let current = revision ? withRevision(approved, revision.fields) : approved
    const resolved = await this.resolve(tx, tenant, { ...change.content, attributes: change.attributes(current.attributes) })
    const currentOwner = await this.ownerOf(tx, current)
    // A *change* sends the listing back through the check. One that changes nothing (a retry,
    // a form saved as it was, a feed's unchanged offer) leaves it as it is.
    const sameContent = changesNothing(current, currentOwner, resolved, change.content.description)
    if (!sameContent && !canBeEdited(approved.statusId)) throw ApiError.conflict(DEAL_CLOSED)
    if (!sameContent && approved.heldStatusId !== null) throw ApiError.conflict(HELD_BY_SUSPENSION)
    const newExternalId = change.externalId !== undefined && change.externalId !== approved.externalId
    if (newExternalId) {
      await repository.setExternalId(tx, tenant.id, id, change.externalId ?? null)
      current = { ...current, externalId: change.externalId ?? null }
    }
    if (sameContent) return { property: await this.view(current, currentOwner, tx, undefined, revision ?? null), changed: newExternalId }
    const owner = resolved.owner ? await repository.upsertOwner(tx, tenant.id, resolved.owner) : resolved.owner
    const changes = {
      ...resolved.columns,
      ...(change.content.description === undefined ? {} : { description: change.content.description }),
      ...(owner === undefined ? {} : { ownerId: owner?.id ?? null }),
    }
    // An owner not sent is the one the listing had, unchanged in this transaction.
    const ownerView = owner === undefined ? currentOwner : owner
    if (approved.statusId !== ListingStatus.Published) {
      const updated = await repository.updateProperty(tx, tenant.id, id, { ...changes, statusId: STATUS_AFTER_EDIT, reviewRequestedAt: new Date() })
      return { property: await this.view(updated, ownerView, tx, undefined, null), changed: true }
    }
    const fields = fieldsOf({ ...current, ...changes })
    if (sameFields(fields, fieldsOf(approved))) {
      // Edited back to what the catalogue shows: nothing left to check.
      await repository.deleteRevision(tx, id)
      const updated = await repository.updateProperty(tx, tenant.id, id, { reviewRequestedAt: null })
      return { property: await this.view(updated, ownerView, tx, undefined, null), changed: true }
    }
    if (revision && sameFields(fields, revision.fields)) {
      // The version the check has (or has rejected) again: only the owner's row changed, the same
      // owner renamed, which the check does not look at. Checking it again would decide the same;
      // the listing was still updated (its owner, at once).
      const updated = await repository.updateProperty(tx, tenant.id, id, {})
      return { property: await this.view(withRevision(updated, fields), ownerView, tx, undefined, revision), changed: true }
    }
    const saved = await repository.saveRevision(tx, tenant.id, id, fields)
    const updated = await repository.updateProperty(tx, tenant.id, id, { reviewRequestedAt: new Date() })
    return { property: await this.view(withRevision(updated, fields), ownerView, tx, undefined, saved), changed: true }
  }

  /**
   * DELETE /properties/{id}/revision: the agency drops the change it made to a published
   * listing (waiting for the check, or rejected by it) and is back to the approved version.
   */
  async discardRevision(tenantId: number, id: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      const approved = await repository.lockProperty(tx, tenantId, id)
      if (!approved) throw ApiError.notFound(PROPERTY_NOT_FOUND)
      if (approved.heldStatusId !== null) throw ApiError.conflict(HELD_BY_SUSPENSION)
      if (!(await repository.deleteRevision(tx, id))) throw ApiError.notFound('This listing has no revision to discard.')
      await repository.updateProperty(tx, tenantId, id, { reviewRequestedAt: null })
    })
  }

  /** Deletes the property and its photos: rows in one transaction, then the files. */
  async remove(tenantId: number, id: number): Promise<void> {
    await this.removeLocked((tx) => repository.lockProperty(tx, tenantId, id), PROPERTY_NOT_FOUND)
  }

  /** Deletes the listing `lock` finds and locks (404 `notFound` when none), as remove() says. */
  private async removeLocked(lock: (tx: Database) => Promise<PropertyRow | undefined>, notFound: string): Promise<void> {
    const fileKeys = await this.db.transaction(async (tx) => {
      const current = await lock(tx)
      if (!current) throw ApiError.notFound(notFound)
      if (current.heldStatusId !== null) throw ApiError.conflict(HELD_BY_SUSPENSION)
      const { tenantId, id } = current
      if (current.statusId === ListingStatus.Published) await this.announce.removed(tx, current, 'deleted')
      const keys = await this.images.deleteRowsOfProperty(tx, tenantId, id)
      await repository.deleteProperty(tx, tenantId, id)
      return keys
    })
    await this.images.removeFiles(fileKeys)
  }

  /** POST /properties/{id}/status: withdraw, close or resubmit. */
  async changeStatus(tenantId: number, id: number, statusId: number): Promise<Property> {
    return this.move(tenantId, id, statusId, agencyMovesFrom)
  }

  /**
   * A feed's listing whose offer left the file, withdrawn by the feed's run (see feedMovesFrom):
   * false when there is nothing to withdraw (withdrawn already, closed, or deleted meanwhile).
   */
  async withdrawGoneOffer(tenantId: number, id: number): Promise<boolean> {
    try {
      await this.move(tenantId, id, ListingStatus.Withdrawn, feedMovesFrom)
      return true
    } catch (error) {
      if (error instanceof ApiError && (error.code === 'conflict' || error.code === 'not_found')) return false
      throw error
    }
  }

  private async move(tenantId: number, id: number, statusId: number, movesFrom: (status: number) => readonly number[]): Promise<Property> {
    return this.db.transaction(async (tx) => {
      const current = await repository.lockProperty(tx, tenantId, id)
      if (!current) throw ApiError.notFound(PROPERTY_NOT_FOUND)
      // No move while held, and StatusConflict's allowed_moves says so.
      if (current.heldStatusId !== null) throw ApiError.conflict(HELD_BY_SUSPENSION, { allowed_moves: [] })
      const allowed = movesFrom(current.statusId)
      if (!allowed.includes(statusId)) {
        const moves = allowed.length === 0 ? 'none' : allowed.join(', ')
        throw ApiError.conflict(`A listing in status ${current.statusId} cannot move to status ${statusId}; allowed moves from here: ${moves}.`, {
          allowed_moves: allowed,
        })
      }
      // Out of the catalogue, a listing is what its agency made it: a revision becomes its row,
      // with the findings on it (a rejection's reasons; none for a revision not yet checked),
      // not the approval's, which were about the version it replaces.
      const revision = current.statusId === ListingStatus.Published ? await repository.findRevision(tx, tenantId, id) : undefined
      if (revision) await repository.deleteRevision(tx, id)
      const updated = await repository.updateProperty(tx, tenantId, id, {
        ...(revision ? { ...revision.fields, moderation: revision.moderation } : {}),
        statusId,
        reviewRequestedAt: awaitsCheck(statusId) ? new Date() : null,
      })
      if (current.statusId === ListingStatus.Published) await this.announce.removed(tx, current, statusId === ListingStatus.Closed ? 'closed' : 'withdrawn')
      return this.view(updated, await this.ownerOf(tx, updated), tx, undefined, null)
    })
  }

  // -------------------------------------------------------------------------------------
  // For the internal check and operators (the moderation module), across agencies. Each
  // takes the transaction its decision and the events announcing it share.

  /**
   * Listings waiting for the internal check, claimed for this transaction (see
   * claimAwaitingCheck): new submissions, and published listings with a revision, as the
   * revision makes them.
   */
  async claimAwaitingCheck(tx: Database, limit: number): Promise<(UnderCheck & { country: CountryCode; ownerPhone: string | null })[]> {
    const claimed = await repository.claimAwaitingCheck(tx, limit)
    const revisions = await repository.findRevisions(
      tx,
      claimed.filter(({ listing }) => listing.statusId === ListingStatus.Published).map(({ listing }) => listing.id),
    )
    const checked = claimed.map(({ listing, country }) => ({ ...underCheck(listing, revisions.get(listing.id)), country }))
    const phones = await repository.findOwnerPhones(
      tx,
      checked.flatMap(({ listing }) => (listing.ownerId === null ? [] : [listing.ownerId])),
    )
    return checked.map((claim) => ({ ...claim, ownerPhone: (claim.listing.ownerId !== null && phones.get(claim.listing.ownerId)) || null }))
  }

  /** The agency's country and the owner's phone of a listing, as the contacts rule reads them. */
  contactFactsOf(tx: Database, listing: PropertyRow): Promise<{ country: CountryCode; ownerPhone: string | null }> {
    return repository.findContactFacts(tx, listing)
  }

  /** Whether the agency already has the same offer live; see the repository's hasLiveDuplicate. */
  hasLiveDuplicate(tx: Database, listing: PropertyRow): Promise<boolean> {
    return repository.hasLiveDuplicate(tx, listing)
  }

  /**
   * Any agency's listing waiting for review (a new submission, or a published listing's revision),
   * locked for an operator's decision: 404 or 409 otherwise.
   */
  async lockUndecided(tx: Database, id: number): Promise<UnderCheck> {
    const listing = await repository.lockAnyTenantsProperty(tx, id)
    if (!listing) throw ApiError.notFound(PROPERTY_NOT_FOUND)
    // A suspended agency's published listing is held (shown as withdrawn) with its revision: still
    // a revision waiting, which the suspension, not the status, keeps from being decided.
    const revision = isPublishedOrHeld(listing) ? await repository.findRevision(tx, listing.tenantId, id) : undefined
    if (!canBeDecided(listing.statusId) && revision?.status !== 'pending_review') {
      throw ApiError.conflict(
        `Only a listing waiting for review (status ${ListingStatus.PendingReview}, or a published listing with a revision waiting for review) can be decided; this one is in status ${listing.statusId}.`,
      )
    }
    return underCheck(listing, revision)
  }

  /** A listing as an operator's decision left it, read in the deciding transaction (whose lock it holds). */
  async findDecided(tx: Database, id: number): Promise<UnderCheck> {
    const listing = await repository.lockAnyTenantsProperty(tx, id)
    if (!listing) throw ApiError.notFound(PROPERTY_NOT_FOUND)
    const revisions = await repository.findRevisions(tx, [id])
    return underCheck(listing, revisions.get(id))
  }

  /** Manual mode: keeps the check's findings, and the listing (or its revision) waits for an operator. */
  async recordFindings(tx: Database, { listing, revision }: UnderCheck, findings: ModerationResult): Promise<void> {
    if (!revision) {
      await repository.recordDecision(tx, listing.tenantId, listing.id, { moderation: findings })
      return
    }
    await repository.recordRevisionFindings(tx, listing.id, findings, false)
    await repository.recordRevisionChecked(tx, listing.tenantId, listing.id)
  }

  /**
   * Publishes a listing waiting for review; when it was published. A revision becomes the
   * listing's row, and the catalogue shows it at once: announced as `mls.listing_updated`,
   * keeping the listing's publication time (its days on market).
   */
  async approve(tx: Database, { listing, approved, revision }: UnderCheck, findings: ModerationResult): Promise<Date> {
    if (!revision) {
      const published = await repository.recordDecision(tx, listing.tenantId, listing.id, {
        moderation: findings,
        statusId: ListingStatus.Published,
        published: true,
      })
      return published.publishedAt!
    }
    await repository.deleteRevision(tx, listing.id)
    const shownBefore = await this.announce.shownNow(tx, listing.id)
    // The version as the check and the operator read it (withRevision), not the stored fields as
    // they are: a revision's attributes written as JSON null are read, and published, as none.
    const updated = await repository.updateProperty(tx, listing.tenantId, listing.id, { ...fieldsOf(listing), moderation: findings, reviewRequestedAt: null })
    await this.announce.updated(tx, updated, approved, shownBefore)
    return updated.publishedAt!
  }

  /**
   * Rejects a listing waiting for review, with the findings the agency sees. A rejected
   * revision stays beside the listing, which stays published as it was.
   */
  async reject(tx: Database, { listing, revision }: UnderCheck, findings: ModerationResult): Promise<void> {
    if (!revision) {
      await repository.recordDecision(tx, listing.tenantId, listing.id, { moderation: findings, statusId: ListingStatus.Rejected })
      return
    }
    await repository.recordRevisionFindings(tx, listing.id, findings, true)
    await repository.updateProperty(tx, listing.tenantId, listing.id, { reviewRequestedAt: null })
  }

  /**
   * An agency is suspended: its published listings leave the catalogue until it is unsuspended,
   * in the caller's transaction. See docs/architecture.md#api-keys-and-suspension.
   */
  async holdPublishedListings(tx: Database, tenantId: number): Promise<number> {
    const held = await repository.holdPublishedListings(tx, tenantId)
    for (const listing of held) await this.announce.removed(tx, listing, 'suspended')
    return held.length
  }

  /**
   * The agency is unsuspended: what the suspension held is published again, without a new
   * check, and announced as `mls.listing_updated` (the catalogue shows it again).
   */
  async releaseHeldListings(tx: Database, tenantId: number): Promise<number> {
    const released = await repository.releaseHeldListings(tx, tenantId)
    for (const listing of released) await this.announce.updated(tx, listing, null)
    return released.length
  }

  /** Listings of every agency in one status, oldest change first, for operators. */
  async listByStatus(statusId: number, page: { limit: number; offset: number }, revision?: RevisionStatus): Promise<{ rows: UnderCheck[]; total: number }> {
    const { rows, total } = await repository.listByStatus(this.db, statusId, page, revision)
    return { rows: rows.map((row) => underCheck(row.listing, row.revision ?? undefined)), total }
  }

  /** Forgets up to `limit` Idempotency-Keys past their 24 hours, in one statement; how many. */
  forgetExpiredIdempotencyKeys(limit: number): Promise<number> {
    return repository.deleteExpiredIdempotencyKeys(this.db, limit)
  }

  private async insert(db: PipelinedDatabase, tenant: AuthenticatedTenant, body: PropertySubmission, externalId: string | null): Promise<Property> {
    const resolved = await this.resolve(db, tenant, { ...body, attributes: body.attributes ?? {} })
    const created = await repository.insertSubmittedProperty(db, this.newColumns(tenant, body, resolved), resolved.owner ?? null, externalId)
    // A property just created has no photos: no query for them.
    return this.view(created.property, created.owner, db, [], null)
  }

  /** A new listing's columns, from its submission as resolve() checked it. */
  private newColumns(tenant: AuthenticatedTenant, body: PropertySubmission, resolved: ResolvedFields): repository.SubmittedColumns {
    return {
      ...resolved.columns,
      tenantId: tenant.id,
      propertyTypeId: propertyTypeIds.get(body.property_type)!,
      dealTypeId: dealTypeIds.get(body.deal_type)!,
      description: body.description ?? null,
    }
  }

  /** The property as the API shows it; `images` when the caller knows them already. */
  /**
   * The property as the API shows it; `images` when the caller knows them already, `revision`
   * when the caller has read it (undefined: read it here). With a revision, `property` is the
   * listing as the revision makes it (withRevision).
   */
  private async view(
    property: PropertyRow,
    owner: OwnerView | null,
    via: PipelinedDatabase = this.db,
    images?: PropertyImage[],
    revision?: RevisionRow | null,
  ): Promise<Property> {
    await this.names.ensure({ cityIds: [property.cityId], districtIds: [property.districtId], complexIds: [property.residentialComplexId] }, via)
    images ??= await this.images.list(property.tenantId, property.id, via)
    revision ??= revision === null ? null : ((await repository.findRevision(via, property.tenantId, property.id)) ?? null)
    return toProperty(property, owner, this.names, images, revision)
  }

  private async ownerOf(tx: Database, property: PropertyRow): Promise<OwnerView | null> {
    return property.ownerId === null ? null : ((await repository.findOwner(tx, property.tenantId, property.ownerId)) ?? null)
  }

  /**
   * Turns submitted fields into columns, checking what the schema cannot: the phone for the
   * tenant's country, that places exist and lie in the city, the attributes by the catalogue.
   * Fields left undefined are left out of the result (unchanged by a PATCH). All problems
   * are reported at once.
   */
  private async resolve(
    tx: PipelinedDatabase,
    tenant: AuthenticatedTenant,
    input: Pick<PropertyPatch, 'property_type' | 'deal_type' | 'price' | 'owner' | 'location'> & { attributes: Record<string, unknown> },
  ): Promise<{ columns: Partial<NewPropertyColumns>; owner: { name: string; phone: string; notes: string | null | undefined } | null | undefined }> {
    const errors: FieldError[] = []
    const columns: Partial<NewPropertyColumns> = {}
    if (input.property_type !== undefined) columns.propertyTypeId = propertyTypeIds.get(input.property_type)!
    if (input.deal_type !== undefined) columns.dealTypeId = dealTypeIds.get(input.deal_type)!
    if (input.price !== undefined) columns.price = input.price === null ? null : Number(input.price)

    let owner: { name: string; phone: string; notes: string | null | undefined } | null | undefined = input.owner === null ? null : undefined
    if (input.owner) {
      const phone = normalisePhone(input.owner.phone, tenant.country)
      if (!phone) errors.push({ loc: ['body', 'owner', 'phone'], msg: `is not a valid phone number for ${tenant.country}` })
      const name = trimmedText(input.owner.name)
      if (name === '') errors.push({ loc: ['body', 'owner', 'name'], msg: 'must not be blank' })
      owner = { name, phone: phone ?? '', notes: input.owner.notes }
    }

    if (input.location === null) {
      Object.assign(columns, {
        cityId: null,
        districtId: null,
        residentialComplexId: null,
        address: null,
        street: null,
        houseNumber: null,
        apartmentNumber: null,
        latitude: null,
        longitude: null,
      })
    } else if (input.location) {
      const location = input.location
      errors.push(...(await this.checkPlaces(tx, location.city_id, location.district_id ?? null, location.residential_complex_id ?? null)))
      const unpaired = unpairedCoordinate(location.latitude, location.longitude, 'a listing')
      if (unpaired) errors.push({ loc: ['body', 'location', unpaired.field], msg: unpaired.msg })
      Object.assign(columns, {
        cityId: location.city_id,
        districtId: location.district_id ?? null,
        residentialComplexId: location.residential_complex_id ?? null,
        address: location.address ?? null,
        street: location.street ?? null,
        houseNumber: location.house_number ?? null,
        apartmentNumber: location.apartment_number ?? null,
        latitude: location.latitude == null ? null : toCoordinate(location.latitude),
        longitude: location.longitude == null ? null : toCoordinate(location.longitude),
      })
    }

    const attributes = parseAttributes(input.attributes)
    errors.push(...attributes.errors)
    columns.attributes = attributes.values satisfies AttributeValues

    if (errors.length > 0) throw ApiError.validation(errors)
    return { columns, owner }
  }

  /** The city exists and the district and complex (if any) lie in it; from the name cache. */
  private async checkPlaces(tx: PipelinedDatabase, cityId: number, districtId: number | null, complexId: number | null): Promise<FieldError[]> {
    await this.names.ensure({ cityIds: [cityId], districtIds: [districtId], complexIds: [complexId] }, tx)
    const errors: FieldError[] = []
    if (!this.names.city(cityId)) errors.push({ loc: ['body', 'location', 'city_id'], msg: `there is no city with id ${cityId} (see GET /cities)` })
    if (districtId !== null && this.names.district(districtId)?.cityId !== cityId) {
      errors.push({ loc: ['body', 'location', 'district_id'], msg: `there is no district with id ${districtId} in city ${cityId}` })
    }
    const complex = complexId === null ? undefined : this.names.complex(complexId)
    if (complexId !== null && complex?.cityId !== cityId) {
      errors.push({ loc: ['body', 'location', 'residential_complex_id'], msg: `there is no residential complex with id ${complexId} in city ${cityId}` })
    } else if (districtId !== null && complex?.districtId != null && complex.districtId !== districtId) {
      errors.push({
        loc: ['body', 'location', 'residential_complex_id'],
        msg: `residential complex ${complexId} lies in district ${complex.districtId}, not in district ${districtId}`,
      })
    }
    return errors
  }
}
