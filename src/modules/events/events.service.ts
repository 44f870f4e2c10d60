import type { Database } from '../../db/client.js'
import type { EventSubject } from '../catalogue/listing-facts.js'
import type { EventType } from './event-types.js'
import * as repository from './events.repository.js'

export type { EventRow, UndispatchedEvent } from './events.repository.js'

/**
 * The outbox. Every method but retention takes the transaction of the change it belongs to:
 * an event commits with the change that caused it, or not at all, and delivery reads it afterwards.
 */
export class EventsService {
  constructor(private readonly db: Database) {}

  /** Writes an event for fan-out to the subscriptions that want it. */
  async record(tx: Database, event: { type: EventType; tenantId: number; data: unknown; subject?: EventSubject }): Promise<void> {
    await repository.insertEvent(tx, event)
  }

  /** Writes an event its writer delivers itself (a test event): fan-out never picks it up. */
  recordDispatched(tx: Database, event: { type: EventType; tenantId: number; data: unknown }): Promise<repository.EventRow> {
    return repository.insertEvent(tx, { ...event, dispatchedAt: new Date() })
  }

  /** Takes up to `limit` events not fanned out yet; see claimUndispatchedEvents. */
  claimForFanOut(tx: Database, limit: number): Promise<repository.UndispatchedEvent[]> {
    return repository.claimUndispatchedEvents(tx, limit)
  }

  /**
   * Retention: deletes up to `limit` events older than `days` once fanned out and no delivery
   * names them (WebhooksService.forgetFinishedDeliveries goes first); how many. One statement,
   * so its locks last one batch.
   */
  forgetEventsDoneWith(days: number, limit: number): Promise<number> {
    return repository.deleteEventsDoneWith(this.db, days, limit)
  }
}
