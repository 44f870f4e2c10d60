/**
 * The delivery queue (D8). Events reach subscriptions in two steps, both safe with any number
 * of workers: fan-out turns each new outbox event into one delivery per subscription that
 * wants it; workers then claim due deliveries with FOR UPDATE SKIP LOCKED, attempt them, and
 * record the outcome. A claim counts the attempt and pushes `next_attempt_at` past a lease:
 * a worker that dies mid-attempt leaves the delivery due again when the lease runs out, and
 * only the claim's holder (its `lease_token`) may record the outcome.
 */
import { randomUUID } from 'node:crypto'
import { and, eq, isNotNull, sql } from 'drizzle-orm'
import { queryRows, type Database } from '../../db/client.js'
import { webhookAttempts, webhookDeliveries, webhookSubscriptions } from '../../db/schema.js'
import type { AttemptOutcome } from './webhook-sender.js'

/** A subscription with no successful delivery for this long is switched off (D8). */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 60 * 60 * 1000
/** Retries land within ±10 % of the schedule, so a receiver's outage does not end in a stampede. */
const JITTER = 0.1
/** The longest a `Retry-After` may push the next attempt. */
const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000

export interface ClaimedDelivery {
  id: number
  subscriptionId: number
  attempt: number
  leaseToken: string
  trigger: 'event' | 'test'
  url: string
  secretSealed: string
  subscriptionFailing: boolean
  event: { id: number; type: string; createdAt: Date; data: unknown }
}

export interface RetryPolicy {
  /** Delays after the first attempt, then after each retry (WEBHOOK_RETRY_SCHEDULE). */
  scheduleMs: readonly number[]
}

/**
 * Fans out up to `limit` undispatched events: `mls.new_listing` to every active subscription
 * for it, of every tenant; the others to the owning tenant's only. One statement, so an event
 * is marked dispatched exactly when its deliveries exist.
 */
export async function fanOutEvents(db: Database, limit: number): Promise<number> {
  const [row] = await queryRows<{ events: number }>(
    db,
    sql`with batch as (
          select id, type, tenant_id from events
          where dispatched_at is null
          order by id
          limit ${limit}::int
          for update skip locked
        ),
        fanned as (
          insert into webhook_deliveries (subscription_id, event_id)
          select s.id, b.id
          from batch b
          join webhook_subscriptions s
            on s.is_active
           and s.events @> array[b.type]
           and (b.type = 'mls.new_listing' or s.tenant_id = b.tenant_id)
          on conflict (event_id, subscription_id) do nothing
          returning 1
        ),
        dispatched as (
          update events set dispatched_at = now() where id in (select id from batch) returning 1
        )
        select (select count(*) from dispatched)::int as events, (select count(*) from fanned)::int as deliveries`,
  )
  return row?.events ?? 0
}

/**
 * Claims up to `limit` due deliveries, at most `perSubscription` of any one subscription and
 * none of `busySubscriptions` (those this worker already has enough of in flight), so one
 * slow receiver cannot take every slot.
 */
export async function claimDeliveries(
  db: Database,
  options: { limit: number; perSubscription: number; busySubscriptions: readonly number[]; leaseMs: number },
): Promise<ClaimedDelivery[]> {
  const token = randomUUID()
  const busy = `{${options.busySubscriptions.join(',')}}`
  const rows = await queryRows<{
    id: number
    subscription_id: number
    attempts: number
    trigger: 'event' | 'test'
    url: string
    secret_sealed: string
    failing: boolean
    event_id: number
    event_type: string
    event_created_at: Date
    event_data: unknown
  }>(
    db,
    sql`with candidates as (
          select id, subscription_id,
                 row_number() over (partition by subscription_id order by next_attempt_at, id) as rank
          from (
            select id, subscription_id, next_attempt_at from webhook_deliveries
            where status = 'pending' and next_attempt_at <= now()
              and subscription_id <> all(${busy}::int[])
            order by next_attempt_at, id
            limit ${options.limit * 4}::int
          ) due
        ),
        claimed as (
          select d.id from webhook_deliveries d
          where d.id in (select id from candidates where rank <= ${options.perSubscription}::int)
            and d.status = 'pending' and d.next_attempt_at <= now()
          order by d.next_attempt_at, d.id
          limit ${options.limit}::int
          for update of d skip locked
        )
        update webhook_deliveries d
        set attempts = d.attempts + 1,
            next_attempt_at = now() + ${options.leaseMs}::int * interval '1 millisecond',
            lease_token = ${token}
        from claimed, webhook_subscriptions s, events e
        where d.id = claimed.id and s.id = d.subscription_id and e.id = d.event_id
        returning d.id::float8 as id, d.subscription_id, d.attempts, d.trigger,
                  s.url, s.secret_sealed, s.failing_since is not null as failing,
                  e.id::float8 as event_id, e.type as event_type, e.created_at as event_created_at, e.data as event_data`,
  )
  return rows.map((row) => ({
    id: Number(row.id),
    subscriptionId: row.subscription_id,
    attempt: row.attempts,
    leaseToken: token,
    trigger: row.trigger,
    url: row.url,
    secretSealed: row.secret_sealed,
    subscriptionFailing: row.failing,
    event: { id: Number(row.event_id), type: row.event_type, createdAt: new Date(row.event_created_at), data: row.event_data },
  }))
}

/** When the next attempt is due after `attempt` failed, or undefined when the schedule is spent. */
export function nextAttemptDelay(attempt: number, outcome: Pick<AttemptOutcome, 'retryAfterMs'>, policy: RetryPolicy): number | undefined {
  const scheduled = policy.scheduleMs[attempt - 1]
  if (scheduled === undefined) return undefined
  const jittered = Math.round(scheduled * (1 - JITTER + 2 * JITTER * Math.random()))
  // Retry-After is honoured as "not before": a receiver may slow the schedule, not hurry it.
  const asked = outcome.retryAfterMs === undefined ? 0 : Math.min(outcome.retryAfterMs, MAX_RETRY_AFTER_MS)
  return Math.max(jittered, asked)
}

/**
 * Records an attempt's outcome: the delivery's new state, the log entry, and what it says of
 * the subscription (a success clears its failing streak; 410 or 5 days of failures switch it
 * off). `retries: false` (test events) gives up after one attempt and leaves the
 * subscription's health alone. Undefined when the lease was lost (another worker took the
 * delivery, or the subscription was deleted meanwhile): the outcome is then not recorded.
 */
export async function recordAttempt(
  db: Database,
  claimed: ClaimedDelivery,
  outcome: AttemptOutcome,
  options: { policy: RetryPolicy; retries: boolean },
): Promise<typeof webhookAttempts.$inferSelect | undefined> {
  const delay = outcome.succeeded || !options.retries || outcome.gone ? undefined : nextAttemptDelay(claimed.attempt, outcome, options.policy)
  const wanted = outcome.succeeded ? 'succeeded' : delay === undefined ? 'failed' : 'pending'
  const retryAt = delay === undefined ? null : new Date(Date.now() + delay)

  return db.transaction(async (tx) => {
    // A delivery cancelled while in flight (its subscription deleted or switched off) stays given up.
    const [delivery] = await tx
      .update(webhookDeliveries)
      .set({
        status: sql`case when ${webhookDeliveries.status} = 'pending' then ${wanted} else ${webhookDeliveries.status} end`,
        leaseToken: null,
        ...(retryAt ? { nextAttemptAt: retryAt } : {}),
      })
      .where(and(eq(webhookDeliveries.id, claimed.id), eq(webhookDeliveries.leaseToken, claimed.leaseToken)))
      .returning({ status: webhookDeliveries.status })
    if (!delivery) return undefined
    const status = outcome.succeeded ? 'succeeded' : delivery.status === 'pending' ? 'pending' : 'failed'
    const nextAttemptAt = status === 'pending' ? retryAt : null
    const [entry] = await tx
      .insert(webhookAttempts)
      .values({
        deliveryId: claimed.id,
        subscriptionId: claimed.subscriptionId,
        eventId: claimed.event.id,
        eventType: claimed.event.type,
        trigger: claimed.trigger,
        attempt: claimed.attempt,
        status,
        responseStatusCode: outcome.statusCode,
        responseBody: outcome.responseBody,
        error: outcome.error,
        durationMs: outcome.durationMs,
        nextAttemptAt,
      })
      .returning()
    if (options.retries) await updateSubscriptionHealth(tx, claimed, outcome)
    return entry
  })
}

async function updateSubscriptionHealth(tx: Database, claimed: ClaimedDelivery, outcome: AttemptOutcome): Promise<void> {
  const subscription = eq(webhookSubscriptions.id, claimed.subscriptionId)
  if (outcome.succeeded) {
    if (claimed.subscriptionFailing) {
      await tx
        .update(webhookSubscriptions)
        .set({ failingSince: null })
        .where(and(subscription, isNotNull(webhookSubscriptions.failingSince)))
    }
    return
  }
  if (outcome.gone) {
    await disableSubscription(
      tx,
      claimed.subscriptionId,
      'The receiver answered 410 Gone: deliveries stopped. Create a new subscription to receive events again.',
    )
    return
  }
  const [row] = await tx
    .update(webhookSubscriptions)
    .set({ failingSince: sql`coalesce(${webhookSubscriptions.failingSince}, now())` })
    .where(subscription)
    .returning({ failingSince: webhookSubscriptions.failingSince, isActive: webhookSubscriptions.isActive })
  if (row?.isActive && row.failingSince && Date.now() - row.failingSince.getTime() >= DISABLE_AFTER_FAILING_MS) {
    await disableSubscription(
      tx,
      claimed.subscriptionId,
      'No delivery succeeded for 5 days: deliveries stopped. Create a new subscription to receive events again.',
    )
  }
}

/** Switches a subscription off and gives up its pending deliveries (their last log entry says so). */
export async function disableSubscription(tx: Database, subscriptionId: number, reason: string): Promise<void> {
  await tx
    .update(webhookSubscriptions)
    .set({ isActive: false, disabledReason: reason, disabledAt: sql`now()` })
    .where(and(eq(webhookSubscriptions.id, subscriptionId), eq(webhookSubscriptions.isActive, true)))
  await cancelPendingDeliveries(tx, subscriptionId)
}

/**
 * Gives up a subscription's pending deliveries. One whose attempt is in flight is left to its
 * worker's recordAttempt, which sees the subscription inactive through its next claim.
 */
async function cancelPendingDeliveries(tx: Database, subscriptionId: number): Promise<void> {
  await tx
    .update(webhookDeliveries)
    .set({ status: 'failed' })
    .where(and(eq(webhookDeliveries.subscriptionId, subscriptionId), eq(webhookDeliveries.status, 'pending')))
  await tx
    .update(webhookAttempts)
    .set({ status: 'failed', nextAttemptAt: null })
    .where(and(eq(webhookAttempts.subscriptionId, subscriptionId), eq(webhookAttempts.status, 'pending')))
}

/**
 * How long a claim holds a delivery: an attempt lasts at most WEBHOOK_TIMEOUT_MS, and the
 * margin covers recording it on a busy database. A shorter lease would let a second worker
 * send while the first is still waiting for its answer.
 */
export function deliveryLeaseMs(timeoutMs: number): number {
  return 2 * timeoutMs + 1000
}
