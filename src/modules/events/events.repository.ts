import type { Database } from '../../db/client.js'
import { events } from '../../db/schema.js'

/** The events changes publish (interface §6 and D8); `webhook.test` is written by the test route. */
export type EventType = 'mls.new_listing' | 'property.published' | 'property.rejected'

/**
 * Writes an event to the outbox. Call it inside the transaction of the change the event
 * announces: they commit together or not at all, and delivery reads the outbox afterwards.
 */
export async function recordEvent(tx: Database, event: { type: EventType; tenantId: number; data: unknown }): Promise<void> {
  await tx.insert(events).values(event)
}
