import { createHash } from 'node:crypto'
import type { Logger } from 'pino'
import { isMomentaryFailure } from '../../db/availability.js'
import type { Database } from '../../db/client.js'
import { retryingConflicts } from '../../db/conflicts.js'
import type { ModerationReason, ModerationResult, PropertyRow, RevisionStatus } from '../../db/schema.js'
import { seedPropertyTypes } from '../../db/seed/dictionaries.js'
import { ApiError } from '../../lib/errors.js'
import { toOffsetTimestamp } from '../../lib/time.js'
import { trimmedText } from '../../lib/text.js'
import { listingFactsOf } from '../catalogue/listing-facts.js'
import type { CatalogueService } from '../catalogue/catalogue.service.js'
import type { EventsService } from '../events/events.service.js'
import { ListingStatus } from '../properties/listing-status.js'
import type { PropertiesService, UnderCheck } from '../properties/properties.service.js'
import type { PropertyTypeName } from '../reference/attribute-catalogue.js'
import type { ReferenceNames } from '../reference/reference-names.js'
import type { TenantsService } from '../tenants/tenants.service.js'
import type { ListingUnderReview } from './moderation.schemas.js'
import { checkListing, descriptionHasContacts } from './rules.js'

const propertyTypeNames = new Map<number, PropertyTypeName>(seedPropertyTypes.map((type) => [type.id, type.name]))

/** A claimed listing, with what the contacts rule needs. */
type Claimed = Awaited<ReturnType<PropertiesService['claimAwaitingCheck']>>[number]

/** The finding on a listing the check could not run on (its error is in the worker's log). */
const CHECK_FAILED: ModerationReason = {
  code: 'check_failed',
  field: null,
  message: 'The internal check could not run on this listing; an operator will decide on it.',
}

/** The check of one listing failed for what the listing holds, not for the moment's reasons. */
class CheckFailed extends Error {
  constructor(
    /** The listing as the check claimed it: the version it failed on. */
    readonly listing: PropertyRow,
    cause: unknown,
  ) {
    super(`The internal check failed on listing ${listing.id}.`, { cause })
  }
}

function findings(reasons: ModerationReason[]): ModerationResult {
  return { checked_at: toOffsetTimestamp(new Date()), reasons }
}

/**
 * The internal check: the worker runs the rules on listings waiting for review and, in `auto`
 * mode, publishes or rejects them; in `manual` mode it records its findings and an operator
 * decides. A decision and the events announcing it commit together. See docs/api.md#the-internal-check.
 */
export class ModerationService {
  constructor(
    private readonly db: Database,
    private readonly mode: 'auto' | 'manual',
    private readonly properties: PropertiesService,
    private readonly catalogue: CatalogueService,
    private readonly events: EventsService,
    private readonly names: ReferenceNames,
    /** A suspended agency's listings are neither checked nor published. */
    private readonly tenants: TenantsService,
  ) {}

  /**
   * Checks up to `batchSize` waiting listings, oldest first; several workers share the queue.
   * A listing the check cannot handle is set aside for an operator (`check_failed`), and the
   * batch is checked again without it: one odd row must not hold up every agency's listings.
   */
  async checkWaiting(batchSize = 25, log?: Logger): Promise<number> {
    for (let setAside = 0; ; setAside++) {
      try {
        // Publishing listing after listing, a batch takes the catalogue's count rows in their
        // order, and can deadlock with another batch or a suspension (retryingConflicts).
        return await retryingConflicts(() => this.checkBatch(batchSize))
      } catch (error) {
        if (!(error instanceof CheckFailed) || setAside >= batchSize) throw error
        log?.error({ err: error.cause, propertyId: error.listing.id }, 'the internal check failed on a listing; it is set aside for an operator')
        await this.setAside(error.listing)
      }
    }
  }

  private checkBatch(batchSize: number): Promise<number> {
    return this.db.transaction(async (tx) => {
      const waiting = await this.properties.claimAwaitingCheck(tx, batchSize)
      // The claim passes over suspended agencies; an agency suspended since (or being suspended
      // now, which this waits for) keeps its listings waiting. Its lock keeps a suspension from
      // committing, and missing what this publishes, until this transaction ends.
      const unsuspended = await this.tenants.lockUnsuspended(
        tx,
        waiting.map(({ listing }) => listing.tenantId),
      )
      for (const claimed of waiting) {
        if (!unsuspended.has(claimed.listing.tenantId)) continue
        try {
          await this.decide(tx, claimed)
        } catch (error) {
          throw isMomentaryFailure(error) ? error : new CheckFailed(claimed.listing, error)
        }
      }
      return waiting.length
    })
  }

  /** Runs the rules on one claimed listing and records, publishes or rejects it as the mode says. */
  private async decide(tx: Database, claimed: Claimed): Promise<void> {
    const { listing, country, ownerPhone } = claimed
    const reasons = checkListing({
      listing,
      propertyType: propertyTypeNames.get(listing.propertyTypeId)!,
      country,
      ownerPhone,
      hasDuplicate: await this.properties.hasLiveDuplicate(tx, listing),
    })
    if (this.mode === 'manual') await this.properties.recordFindings(tx, claimed, findings(reasons))
    else if (reasons.length === 0) await this.publishListing(tx, claimed)
    else await this.rejectListing(tx, claimed, reasons)
  }

  /**
   * Leaves a listing the check failed on to an operator, whatever the mode, as manual mode
   * leaves every listing: out of the check's queue, with the finding `check_failed`. An edit
   * sends it to the check again.
   */
  private async setAside(failed: PropertyRow): Promise<void> {
    await this.db.transaction(async (tx) => {
      // Decided, deleted or edited meanwhile (an edit waiting for the failed batch's lock on the
      // listing): nothing is left to set aside, or the new version is the next batch's to check.
      const undecided = await this.properties.lockUndecided(tx, failed.id).catch((error: unknown) => {
        if (error instanceof ApiError) return undefined
        throw error
      })
      const requested = undecided?.listing.reviewRequestedAt
      if (!undecided || !requested || requested.getTime() !== failed.reviewRequestedAt?.getTime()) return
      await this.properties.recordFindings(tx, undecided, findings([CHECK_FAILED]))
    })
  }

  /**
   * An operator publishes a listing waiting for review (manual mode, or overruling the check);
   * not while its agency is suspended.
   */
  async approve(id: number, version?: string): Promise<ListingUnderReview> {
    // Publication writes the catalogue's count rows, as the check's batches and a suspension
    // do, so it can deadlock with them: retried as they are (retryingConflicts).
    return retryingConflicts(() =>
      this.db.transaction(async (tx) => {
        const undecided = await this.properties.lockUndecided(tx, id)
        refuseAnotherVersion(undecided, version)
        await this.refuseWhileSuspended(tx, undecided, 'published')
        // The catalogue lists every listing under its city: one without a city (or a revision that
        // removed it) cannot be published, whatever the operator decides.
        if (undecided.listing.cityId === null) {
          throw ApiError.conflict(
            'The listing has no location, so it cannot be published: the catalogue lists every listing under its city. The agency must give its location (with city_id) first.',
          )
        }
        // An operator overrules the check's other findings, never this one: the public catalogue
        // carries no contacts, whoever publishes it (read again now: the check may not have run
        // on this version yet).
        const { country, ownerPhone } = await this.properties.contactFactsOf(tx, undecided.listing)
        if (descriptionHasContacts(undecided.listing.description, country, ownerPhone)) {
          throw ApiError.conflict(
            'The description contains a phone number, an e-mail address or a messenger contact, so it cannot be published: the public catalogue never carries contacts. The agency must remove them first.',
          )
        }
        await this.publishListing(tx, undecided)
        return underReview(await this.properties.findDecided(tx, id))
      }),
    )
  }

  /**
   * An operator rejects a waiting listing; the check's findings on the version decided are kept
   * beside the reason. A version edited since the check last ran (still waiting for it) has
   * none yet: the findings it carries are of the version it replaced.
   */
  async reject(id: number, reason: string | undefined, version?: string): Promise<ListingUnderReview> {
    // A reason may be left out (the agency then reads a general one), but one given says something.
    const why = reason === undefined ? undefined : trimmedText(reason)
    if (why === '') throw ApiError.validation([{ loc: ['body', 'reason'], msg: 'must not be blank: leave it out, or say why' }])
    // Locks what a suspension and the check's batches lock, so retried as approve is.
    return retryingConflicts(() =>
      this.db.transaction(async (tx) => {
        const undecided = await this.properties.lockUndecided(tx, id)
        refuseAnotherVersion(undecided, version)
        await this.refuseWhileSuspended(tx, undecided, 'rejected')
        const waitingForCheck = undecided.listing.reviewRequestedAt !== null
        const checked = waitingForCheck ? null : undecided.revision ? undecided.revision.moderation : undecided.listing.moderation
        await this.rejectListing(tx, undecided, [
          ...(checked?.reasons ?? []),
          { code: 'rejected_by_moderator', field: null, message: why ?? 'Rejected by a moderator.' },
        ])
        return underReview(await this.properties.findDecided(tx, id))
      }),
    )
  }

  /**
   * A suspended agency's listings wait for a decision as they wait for the check: it receives
   * no event while suspended, so a rejection would never reach it (docs/api.md#suspension).
   */
  private async refuseWhileSuspended(tx: Database, undecided: UnderCheck, decision: 'published' | 'rejected'): Promise<void> {
    const { tenantId } = undecided.listing
    if (!(await this.tenants.lockUnsuspended(tx, [tenantId])).has(tenantId)) {
      throw ApiError.conflict(`The listing’s agency is suspended; its listings cannot be ${decision} until it is unsuspended.`)
    }
  }

  /** Listings in one status across all agencies, oldest change first, with the check's findings. */
  async list(status: number | undefined, limit: number, offset: number, revision?: RevisionStatus) {
    if (revision !== undefined && status !== undefined && status !== ListingStatus.Published) {
      throw ApiError.validation([
        { loc: ['query', 'status_id'], msg: `must be ${ListingStatus.Published} (published) with revision: only a published listing has revisions` },
      ])
    }
    const statusId = status ?? (revision === undefined ? ListingStatus.PendingReview : ListingStatus.Published)
    const { rows, total } = await this.properties.listByStatus(statusId, { limit, offset }, revision)
    return {
      items: rows.map(underReview),
      total,
      limit,
      offset,
    }
  }

  /**
   * Publishes the listing and announces it: `mls.new_listing` to the MLS, `property.published`
   * to its agency. A published listing's revision is announced as `mls.listing_updated`, by the
   * properties module that writes it.
   */
  private async publishListing(tx: Database, undecided: UnderCheck): Promise<void> {
    const { listing, revision } = undecided
    const publishedAt = await this.properties.approve(tx, undecided, findings([]))
    const item = await this.catalogue.itemOf(tx, listing.id)
    if (!revision) {
      await this.events.record(tx, {
        type: 'mls.new_listing',
        tenantId: listing.tenantId,
        data: item,
        subject: { before: null, after: listingFactsOf(listing) },
      })
    }
    await this.events.record(tx, {
      type: 'property.published',
      tenantId: listing.tenantId,
      data: {
        property_id: listing.id,
        external_id: listing.externalId,
        status_id: ListingStatus.Published,
        status_name: this.names.statuses.get(ListingStatus.Published)!,
        published_at: toOffsetTimestamp(publishedAt),
        listing: item,
        revision: revision !== undefined,
      },
    })
  }

  /** Rejects the listing; a published listing's revision is rejected, and the listing stays as it was. */
  private async rejectListing(tx: Database, undecided: UnderCheck, reasons: ModerationReason[]): Promise<void> {
    const { listing, revision } = undecided
    await this.properties.reject(tx, undecided, findings(reasons))
    const statusId = revision ? ListingStatus.Published : ListingStatus.Rejected
    await this.events.record(tx, {
      type: 'property.rejected',
      tenantId: listing.tenantId,
      data: {
        property_id: listing.id,
        external_id: listing.externalId,
        status_id: statusId,
        status_name: this.names.statuses.get(statusId)!,
        reasons,
        revision: revision !== undefined,
      },
    })
  }
}

/**
 * A decision given the version the operator read applies to that version only: the agency may
 * have edited the listing (or sent a new revision) since, and the check found other things.
 */
function refuseAnotherVersion(undecided: UnderCheck, version: string | undefined): void {
  if (version !== undefined && underReview(undecided).version !== version) {
    throw ApiError.conflict('The listing has changed since that version was read; read it again (GET /admin/properties) before deciding.')
  }
}

/** A listing as an operator reviews it: the submission's facts (a revision's, if it has one) and the check's findings. */
function underReview(undecided: UnderCheck): ListingUnderReview {
  const shown = shownForReview(undecided)
  // The agency's own id is bookkeeping, no edit (docs/api.md#your-own-ids): re-keyed, the listing is the version read.
  const { external_id: _bookkeeping, ...content } = shown
  return { ...shown, version: createHash('sha256').update(JSON.stringify(content)).digest('base64url').slice(0, 22) }
}

function shownForReview({ listing: row, revision }: UnderCheck): Omit<ListingUnderReview, 'version'> {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    external_id: row.externalId,
    status_id: row.statusId,
    property_type_id: row.propertyTypeId,
    deal_type_id: row.dealTypeId,
    price: row.price,
    city_id: row.cityId,
    district_id: row.districtId,
    residential_complex_id: row.residentialComplexId,
    address: row.address,
    latitude: row.latitude,
    longitude: row.longitude,
    description: row.description,
    attributes: row.attributes,
    moderation: revision ? revision.moderation : row.moderation,
    waiting_for_check: row.reviewRequestedAt !== null,
    revision: revision ? { status: revision.status, submitted_at: toOffsetTimestamp(revision.submittedAt) } : null,
    updated_at: toOffsetTimestamp(row.updatedAt),
  }
}
