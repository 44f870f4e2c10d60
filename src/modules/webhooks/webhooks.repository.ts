import { and, count, desc, eq } from 'drizzle-orm'
import type { Database } from '../../db/client.js'
import { webhookAttempts, webhookSubscriptions } from '../../db/schema.js'

export type SubscriptionRow = typeof webhookSubscriptions.$inferSelect
export type NewSubscription = typeof webhookSubscriptions.$inferInsert
export type AttemptRow = typeof webhookAttempts.$inferSelect

export async function listSubscriptions(db: Database, tenantId: number): Promise<SubscriptionRow[]> {
  return db.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.tenantId, tenantId)).orderBy(webhookSubscriptions.id)
}

export async function findSubscription(db: Database, tenantId: number, id: number): Promise<SubscriptionRow | undefined> {
  const [row] = await db
    .select()
    .from(webhookSubscriptions)
    .where(and(eq(webhookSubscriptions.tenantId, tenantId), eq(webhookSubscriptions.id, id)))
  return row
}

export async function countSubscriptions(db: Database, tenantId: number): Promise<number> {
  const [row] = await db.select({ subscriptions: count() }).from(webhookSubscriptions).where(eq(webhookSubscriptions.tenantId, tenantId))
  return row?.subscriptions ?? 0
}

export async function insertSubscription(db: Database, values: NewSubscription): Promise<SubscriptionRow> {
  const [row] = await db.insert(webhookSubscriptions).values(values).returning()
  return row!
}

/** Deletes the subscription with its deliveries and log (cascade); false if it is not the tenant's. */
export async function deleteSubscription(db: Database, tenantId: number, id: number): Promise<boolean> {
  const rows = await db
    .delete(webhookSubscriptions)
    .where(and(eq(webhookSubscriptions.tenantId, tenantId), eq(webhookSubscriptions.id, id)))
    .returning({ id: webhookSubscriptions.id })
  return rows.length > 0
}

/** A page of the subscription's delivery log, newest first, and the number of entries. */
export async function pageOfAttempts(
  db: Database,
  subscriptionId: number,
  page: { limit: number; offset: number },
): Promise<{ rows: AttemptRow[]; total: number }> {
  const where = eq(webhookAttempts.subscriptionId, subscriptionId)
  const [rows, [counted]] = await Promise.all([
    db.select().from(webhookAttempts).where(where).orderBy(desc(webhookAttempts.id)).limit(page.limit).offset(page.offset),
    db.select({ total: count() }).from(webhookAttempts).where(where),
  ])
  return { rows, total: counted?.total ?? 0 }
}
