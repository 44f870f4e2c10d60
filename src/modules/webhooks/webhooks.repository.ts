import { and, arrayOverlaps, count, desc, eq, inArray, isNotNull, sql } from 'drizzle-orm'
import type { Database } from '../../db/client.js'
import { rowsWithTotal } from '../../db/paging.js'
import { tenants, webhookAttempts, webhookSubscriptions, webhookSubscriptionsRevision } from '../../db/schema.js'
import type { ListingFilter } from '../catalogue/listing-filter.js'
import { MLS_WIDE_EVENTS } from '../events/event-types.js'
import type { AttemptRow } from './deliveries.repository.js'

export type SubscriptionRow = typeof webhookSubscriptions.$inferSelect
export type NewSubscription = typeof webhookSubscriptions.$inferInsert

export async function listSubscriptions(db: Database, tenantId: number): Promise<SubscriptionRow[]> {
  return db.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.tenantId, tenantId)).orderBy(webhookSubscriptions.id)
}

/**
 * The tenant's subscription, locked until the transaction ends where asked: `key share`, it
 * cannot be deleted (rows about to refer to it need it); `update`, it can be neither deleted
 * nor changed (a change made from what it is now).
 */
export async function findSubscription(db: Database, tenantId: number, id: number, lock?: 'key share' | 'update'): Promise<SubscriptionRow | undefined> {
  const query = db
    .select()
    .from(webhookSubscriptions)
    .where(and(eq(webhookSubscriptions.tenantId, tenantId), eq(webhookSubscriptions.id, id)))
  const [row] = lock ? await query.for(lock) : await query
  return row
}

/**
 * Counts the tenant's subscriptions holding the tenant's row until the transaction ends, so
 * that concurrent creations count and insert one after the other.
 */
export async function countSubscriptionsLocked(tx: Database, tenantId: number): Promise<number> {
  await tx.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, tenantId)).for('update')
  const [row] = await tx.select({ subscriptions: count() }).from(webhookSubscriptions).where(eq(webhookSubscriptions.tenantId, tenantId))
  return row?.subscriptions ?? 0
}

export async function insertSubscription(db: Database, values: NewSubscription): Promise<SubscriptionRow> {
  const [row] = await db.insert(webhookSubscriptions).values(values).returning()
  return row!
}

/** Changes the tenant's subscription; undefined if it is not the tenant's. */
export async function updateSubscription(
  db: Database,
  tenantId: number,
  id: number,
  values: Partial<Pick<NewSubscription, 'url' | 'events' | 'description' | 'filter'>>,
  { newReceiver }: { newReceiver: boolean },
): Promise<SubscriptionRow | undefined> {
  const [row] = await db
    .update(webhookSubscriptions)
    // A new receiver's failures are counted afresh.
    .set({ ...values, ...(newReceiver ? { failingSince: null } : {}) })
    .where(and(eq(webhookSubscriptions.tenantId, tenantId), eq(webhookSubscriptions.id, id)))
    .returning()
  return row
}

/** The revision of the subscriptions' events and filters (see webhookSubscriptionsRevision). */
export async function readSubscriptionsRevision(db: Database): Promise<number> {
  const [row] = await db.select({ revision: webhookSubscriptionsRevision.revision }).from(webhookSubscriptionsRevision)
  return row?.revision ?? 0
}

/** Every active subscription with a filter and an `mls.*` event, of every tenant: what fan-out matches in memory. */
export async function listFilteredSubscriptions(db: Database): Promise<{ id: number; events: string[]; filter: ListingFilter }[]> {
  const rows = await db
    .select({ id: webhookSubscriptions.id, events: webhookSubscriptions.events, filter: webhookSubscriptions.filter })
    .from(webhookSubscriptions)
    .where(
      and(eq(webhookSubscriptions.isActive, true), isNotNull(webhookSubscriptions.filter), arrayOverlaps(webhookSubscriptions.events, [...MLS_WIDE_EVENTS])),
    )
    .orderBy(webhookSubscriptions.id)
  return rows.map((row) => ({ id: row.id, events: row.events, filter: row.filter! }))
}

/** Deletes the subscription with its deliveries and log; false if it is not the tenant's. */
export function deleteSubscription(db: Database, tenantId: number, id: number): Promise<boolean> {
  return db.transaction(async (tx) => {
    // The deliveries first, in the order of their ids, then the subscription: the order in which
    // a worker recording an attempt takes them (the delivery, then the subscription, by the log
    // entry's foreign key). Deleted by the cascade, the subscription would be locked first, and
    // the two would wait on each other.
    await tx.execute(sql`
      delete from webhook_deliveries where id in (
        select d.id from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id
        where s.id = ${id}::int and s.tenant_id = ${tenantId}::int
        order by d.id for update of d)`)
    const rows = await tx
      .delete(webhookSubscriptions)
      .where(and(eq(webhookSubscriptions.tenantId, tenantId), eq(webhookSubscriptions.id, id)))
      .returning({ id: webhookSubscriptions.id })
    return rows.length > 0
  })
}

/** A page of one of the tenant's subscriptions' delivery log, newest first, and the number of entries. */
export function pageOfAttempts(
  db: Database,
  tenantId: number,
  subscriptionId: number,
  page: { limit: number; offset: number },
): Promise<{ rows: AttemptRow[]; total: number }> {
  const tenantsSubscription = db
    .select({ id: webhookSubscriptions.id })
    .from(webhookSubscriptions)
    .where(and(eq(webhookSubscriptions.tenantId, tenantId), eq(webhookSubscriptions.id, subscriptionId)))
  const where = inArray(webhookAttempts.subscriptionId, tenantsSubscription)
  const rows = db.select().from(webhookAttempts).where(where).orderBy(desc(webhookAttempts.id)).limit(page.limit).offset(page.offset)
  return rowsWithTotal(db, rows, webhookAttempts, where)
}
