import { isDeepStrictEqual } from 'node:util'
import type { CatalogueRemovalReason, PropertyRow } from '../../db/schema.js'
import type { Database } from '../../db/client.js'
import type { EventsService } from '../events/events.service.js'
import type { CatalogueDetail } from './catalogue.schemas.js'
import type { CatalogueService } from './catalogue.service.js'
import { listingFactsOf } from './listing-facts.js'

/**
 * The outbox's side of catalogue changes: `mls.listing_updated` and `mls.listing_removed`,
 * recorded by whoever changes what the catalogue shows, in the transaction of the change. (The
 * change feed needs no caller: the database records it, see catalogue-changes.repository.ts.)
 * A publication is announced by the check itself, as `mls.new_listing`.
 */
export class CatalogueAnnouncements {
  constructor(
    private readonly catalogue: CatalogueService,
    private readonly events: EventsService,
  ) {}

  /** What the catalogue shows of a listing now, for `updated` to tell afterwards whether a change showed in it. */
  shownNow(tx: Database, id: number): Promise<CatalogueDetail | undefined> {
    return this.catalogue.detailOf(tx, id)
  }

  /**
   * The catalogue shows `listing` anew (a revision approved, photos changed, back after a
   * suspension); `before` is the row it showed until now, null if it showed none. With
   * `shownBefore` (shownNow's answer before the change), a change that shows nothing new (an
   * address or an owner, which the catalogue does not show) is not announced: the change feed,
   * which compares what the catalogue shows, has nothing to add either.
   */
  async updated(tx: Database, listing: PropertyRow, before: PropertyRow | null, shownBefore?: CatalogueDetail): Promise<void> {
    const data = await this.catalogue.detailOf(tx, listing.id)
    if (!data || (shownBefore !== undefined && isDeepStrictEqual(shownBefore, data))) return
    await this.events.record(tx, {
      type: 'mls.listing_updated',
      tenantId: listing.tenantId,
      data,
      subject: { before: before && listingFactsOf(before), after: listingFactsOf(listing) },
    })
  }

  /** The published listing `listing` (its last row in the catalogue) leaves the catalogue. */
  async removed(tx: Database, listing: PropertyRow, reason: CatalogueRemovalReason): Promise<void> {
    await this.events.record(tx, {
      type: 'mls.listing_removed',
      tenantId: listing.tenantId,
      data: { id: listing.id, reason },
      subject: { before: listingFactsOf(listing), after: null },
    })
  }

  /**
   * Photos of a listing changed: announced if the catalogue shows the listing and, given
   * `shownBefore` (shownNow's answer before the change), now shows it differently.
   */
  async photosChanged(tx: Database, propertyId: number, shownBefore?: CatalogueDetail): Promise<void> {
    const listing = await this.catalogue.publishedRowOf(tx, propertyId)
    if (listing) await this.updated(tx, listing, listing, shownBefore)
  }
}
