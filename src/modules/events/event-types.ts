import { catalogueRemovalReasons } from '../../db/schema.js'
/**
 * Every event the service publishes, in one list: what changes write to the outbox, what a
 * webhook subscription may choose, and what the OpenAPI document describes. See
 * docs/api.md#webhooks.
 */
export const SUBSCRIBABLE_EVENTS = [
  'mls.new_listing',
  'mls.listing_updated',
  'mls.listing_removed',
  'property.published',
  'property.rejected',
  'feed.run_finished',
] as const
export type SubscribableEvent = (typeof SUBSCRIBABLE_EVENTS)[number]

/** Sent by POST /webhooks/{id}/test to that subscription only, whatever events it chose. */
export const TEST_EVENT = 'webhook.test'

export const EVENT_TYPES = [...SUBSCRIBABLE_EVENTS, TEST_EVENT] as const
export type EventType = (typeof EVENT_TYPES)[number]

/**
 * The MLS-wide announcements: each reaches every agency's subscriptions, not only its own
 * agency's, and carries its listing's facts before and after (events.subject), which a
 * subscription's `filter` is matched against.
 */
export const MLS_WIDE_EVENTS = ['mls.new_listing', 'mls.listing_updated', 'mls.listing_removed'] as const satisfies readonly SubscribableEvent[]
export type MlsWideEvent = (typeof MLS_WIDE_EVENTS)[number]

export function isMlsWide(type: string): type is MlsWideEvent {
  return (MLS_WIDE_EVENTS as readonly string[]).includes(type)
}

/** Why a listing left a subscription's view (`mls.listing_removed`'s `reason`). `unmatched`: it no longer matches the subscription's filter. */
export const LISTING_REMOVED_REASONS = [...catalogueRemovalReasons, 'unmatched'] as const

/**
 * The PostgreSQL channel on which the outbox announces events that await fan-out: a trigger on
 * `events` notifies it from the transaction that writes them (migration 0017), so it arrives when
 * they commit. It carries nothing; whoever hears it reads the outbox.
 */
export const EVENTS_CHANNEL = 'mls_outbox_events'
