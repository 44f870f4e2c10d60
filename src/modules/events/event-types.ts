/**
 * Every event the service publishes, in one list: what changes write to the outbox, what a
 * webhook subscription may choose, and what the OpenAPI document describes. See
 * docs/api.md#webhooks.
 */
export const SUBSCRIBABLE_EVENTS = ['mls.new_listing', 'mls.listing_updated', 'mls.listing_removed', 'property.published', 'property.rejected'] as const
export type SubscribableEvent = (typeof SUBSCRIBABLE_EVENTS)[number]

/** Sent by POST /webhooks/{id}/test to that subscription only, whatever events it chose. */
export const TEST_EVENT = 'webhook.test'

export const EVENT_TYPES = [...SUBSCRIBABLE_EVENTS, TEST_EVENT] as const
export type EventType = (typeof EVENT_TYPES)[number]

/** The MLS-wide announcements of catalogue changes: they reach every agency's subscriptions, not only the listing's agency's. */
export const MLS_WIDE_EVENTS = ['mls.new_listing', 'mls.listing_updated', 'mls.listing_removed'] as const satisfies readonly SubscribableEvent[]

/**
 * The PostgreSQL channel on which the outbox announces events that await fan-out: a trigger on
 * `events` notifies it from the transaction that writes them (migration 0017), so it arrives when
 * they commit. It carries nothing; whoever hears it reads the outbox.
 */
export const EVENTS_CHANNEL = 'mls_outbox_events'
