import { sql } from 'drizzle-orm'
import { queryRows, type Database } from '../../db/client.js'
import { events } from '../../db/schema.js'
import type { EventSubject } from '../catalogue/listing-facts.js'
import type { EventType } from './event-types.js'

export type EventRow = typeof events.$inferSelect

export interface NewEvent {
  type: EventType
  tenantId: number
  data: unknown
  /** For `mls.*` events: the listing before and after the change (see listing-facts.ts). */
  subject?: EventSubject
  /** Set for an event sent by its writer itself (a test event), which fan-out never sees. */
  dispatchedAt?: Date
}

export async function insertEvent(db: Database, event: NewEvent): Promise<EventRow> {
  const [row] = await db.insert(events).values(event).returning()
  return row!
}

/** An event claimed for fan-out: what decides which subscriptions receive it. */
export interface UndispatchedEvent {
  id: number
  type: EventType
  tenantId: number | null
  /** For `mls.*` events: the listing before and after, which filtered subscriptions are matched against. */
  subject: EventSubject | null
}

/**
 * Marks up to `limit` undispatched events dispatched, oldest first, and returns them. Rows are
 * claimed FOR UPDATE SKIP LOCKED, so concurrent workers take disjoint batches; the caller
 * creates their deliveries in the same transaction, so an event is marked dispatched exactly
 * when its deliveries exist.
 */
export async function claimUndispatchedEvents(tx: Database, limit: number): Promise<UndispatchedEvent[]> {
  const rows = await queryRows<{ id: number; type: EventType; tenant_id: number | null; subject: EventSubject | null }>(
    tx,
    sql`update events set dispatched_at = now()
        where id in (
          select id from events
          where dispatched_at is null
          order by id
          limit ${limit}::int
          for update skip locked
        )
        returning id::float8 as id, type, tenant_id, subject`,
  )
  return rows.map((row) => ({ id: row.id, type: row.type, tenantId: row.tenant_id, subject: row.subject })).sort((a, b) => a.id - b.id)
}

/**
 * Deletes up to `limit` dispatched events older than `days` that no delivery names any more,
 * oldest first; how many. The webhooks module deletes an event's deliveries once none is
 * pending, so an event still named by one is not done with. Rows another sweep holds are skipped.
 */
export async function deleteEventsDoneWith(db: Database, days: number, limit: number): Promise<number> {
  const [row] = await queryRows<{ deleted: number }>(
    db,
    sql`with done as (
          select e.id from events e
          where e.created_at < now() - ${days}::int * interval '1 day'
            and e.dispatched_at is not null
            and not exists (select 1 from webhook_deliveries d where d.event_id = e.id)
          order by e.created_at
          limit ${limit}::int
          for update skip locked
        ),
        deleted as (delete from events where id in (select id from done) returning 1)
        select count(*)::int as deleted from deleted`,
  )
  return row?.deleted ?? 0
}
