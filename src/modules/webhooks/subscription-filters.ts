/**
 * Which filtered subscriptions an `mls.*` event reaches, decided in memory: a fan-out batch of
 * 200 events against thousands of filters is a few hundred thousand comparisons, where a query
 * per subscription would be thousands of round trips. Subscriptions without a filter are left
 * to the fan-out's SQL, as before filters existed.
 *
 * For a filtered subscription, with `before` and `after` the listing's facts (events.subject):
 * - `mls.new_listing`: delivered if `after` matches;
 * - `mls.listing_updated`: delivered if `after` matches; otherwise, if `before` matched, the
 *   listing has stopped matching: an `mls.listing_removed` with reason `unmatched` in its place,
 *   to a subscription that chose `mls.listing_removed` (one that did not simply stops hearing of
 *   the listing). A listing that starts matching arrives as `mls.listing_updated`;
 * - `mls.listing_removed`: delivered if `before` matched.
 * An event without the facts it needs (none written before they were kept) reaches no filtered subscription.
 */
import { compileFilter, type ListingFilter, type ListingMatcher } from '../catalogue/listing-filter.js'
import type { EventSubject } from '../catalogue/listing-facts.js'
import type { Database } from '../../db/client.js'
import type { PlannedDeliveries } from './deliveries.repository.js'

/** A filtered subscription as fan-out keeps it. */
export interface FilteredSubscription {
  id: number
  events: ReadonlySet<string>
  matches: ListingMatcher
}

export function filteredSubscription(row: { id: number; events: readonly string[]; filter: ListingFilter }): FilteredSubscription {
  return { id: row.id, events: new Set(row.events), matches: compileFilter(row.filter) }
}

/** The deliveries of `mls.*` events to filtered subscriptions, and what each sends. */
export function planFilteredDeliveries(
  events: readonly { id: number; type: string; subject: EventSubject | null }[],
  subscriptions: readonly FilteredSubscription[],
): PlannedDeliveries {
  const planned: PlannedDeliveries = { subscriptionIds: [], eventIds: [], variants: [] }
  const add = (subscriptionId: number, eventId: number, variant: 'unmatched' | null) => {
    planned.subscriptionIds.push(subscriptionId)
    planned.eventIds.push(eventId)
    planned.variants.push(variant)
  }
  for (const event of events) {
    const before = event.subject?.before ?? null
    const after = event.subject?.after ?? null
    switch (event.type) {
      case 'mls.new_listing':
        if (after === null) break
        for (const s of subscriptions) if (s.events.has(event.type) && s.matches(after)) add(s.id, event.id, null)
        break
      case 'mls.listing_updated':
        for (const s of subscriptions) {
          if (after !== null && s.matches(after)) {
            if (s.events.has(event.type)) add(s.id, event.id, null)
          } else if (before !== null && s.events.has('mls.listing_removed') && s.matches(before)) {
            add(s.id, event.id, 'unmatched')
          }
        }
        break
      case 'mls.listing_removed':
        if (before === null) break
        for (const s of subscriptions) if (s.events.has(event.type) && s.matches(before)) add(s.id, event.id, null)
        break
    }
  }
  return planned
}

/**
 * A worker's copy of the active filtered subscriptions, read again only when the revision the
 * database keeps of them (moved by a trigger on every creation, deletion, change of events or
 * of filter) is not the one it was read at. The fan-out reads the revision under its shared
 * lock, which changes of events or filter wait for (deliveries.repository.ts, lockOutFanOut), so
 * it matches against the subscriptions exactly as committed: no staleness at all for those. A
 * subscription disabled or deleted meanwhile may still be in the copy; the insert leaves it out.
 */
export class SubscriptionFilters {
  private revision: number | undefined
  private subscriptions: FilteredSubscription[] = []

  constructor(
    private readonly readRevision: (tx: Database) => Promise<number>,
    private readonly load: (tx: Database) => Promise<FilteredSubscription[]>,
  ) {}

  /** The subscriptions as committed, read in the fan-out's transaction `tx` once it holds its lock. */
  async current(tx: Database): Promise<readonly FilteredSubscription[]> {
    const revision = await this.readRevision(tx)
    if (revision !== this.revision) {
      // Read after the revision: a change committed in between is in the rows and moves the
      // revision again, so it is read once more next time; never the other way round.
      this.subscriptions = await this.load(tx)
      this.revision = revision
    }
    return this.subscriptions
  }
}
