/**
 * The delivery queue and its log: webhook_deliveries, webhook_attempts, and the health of
 * webhook_subscriptions that attempts decide. Events reach subscriptions in two steps, both safe with any number
 * of workers: fan-out turns each new outbox event into one delivery per subscription that
 * wants it; workers then claim due deliveries with FOR UPDATE SKIP LOCKED, attempt them, and
 * record the outcome. A claim counts the attempt and pushes `next_attempt_at` past a lease:
 * a worker that dies mid-attempt leaves the delivery due again when the lease runs out, and
 * only the claim's holder (its `lease_token`) may record the outcome.
 */
import { randomUUID } from 'node:crypto'
import { and, eq, isNotNull, sql, type SQL } from 'drizzle-orm'
import { queryRows, type Database } from '../../db/client.js'
import { webhookAttempts, webhookDeliveries, webhookSubscriptions } from '../../db/schema.js'
import { MLS_WIDE_EVENTS, type SubscribableEvent } from '../events/event-types.js'
import type { UndispatchedEvent } from '../events/events.service.js'
import { failedTooLong } from './delivery-policy.js'
import type { AttemptOutcome } from './webhook-sender.js'

export type AttemptRow = typeof webhookAttempts.$inferSelect

export type DeliveryVariant = 'unmatched'

export interface ClaimedDelivery {
  id: number
  subscriptionId: number
  attempt: number
  leaseToken: string
  trigger: 'event' | 'test'
  /** `unmatched`: `event` is the `mls.listing_removed` sent in place of the event it names (see webhookDeliveries.variant). */
  variant: DeliveryVariant | null
  url: string
  secretSealed: string
  subscriptionFailing: boolean
  event: { id: number; type: string; createdAt: Date; data: unknown }
}

/** What an `unmatched` delivery sends: the listing left the subscription's view, with `{id, reason: "unmatched"}`. */
const UNMATCHED_EVENT: SubscribableEvent = 'mls.listing_removed'

/**
 * The advisory lock between fan-out and what changes who receives an event: every fan-out holds
 * it shared; a suspension takes it alone, so that no fan-out that read the agency before its
 * suspension can add deliveries after the suspension gave up the agency's pending ones; so does
 * a subscription's creation or change of events or filter, so that a fan-out never mixes the
 * subscriptions before and after it.
 */
const FAN_OUT_LOCK_ID = 0x6d6c7366 // "mlsf"

/**
 * The PostgreSQL channel on which fan-out announces new deliveries, from the transaction that
 * creates them, so the workers' delivery jobs claim them as soon as it commits. It carries nothing.
 */
export const DELIVERIES_CHANNEL = 'mls_webhook_deliveries'

/**
 * Taken, shared, by every fan-out before it reads the subscriptions; alone by a suspension and
 * by a change of a subscription's events or filter (see lockOutFanOut). So a fan-out sees the
 * subscriptions, in the table and in a worker's memory (subscription-filters.ts), as they were
 * when it took the lock, up to its insert.
 */
export async function holdFanOutLock(tx: Database): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock_shared(${FAN_OUT_LOCK_ID})`)
}

/**
 * Waits for the fan-outs under way and keeps new ones waiting until the caller's transaction
 * ends: a subscription's new events or filter apply to every event fanned out after it commits,
 * and to none before.
 */
export async function lockOutFanOut(tx: Database): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${FAN_OUT_LOCK_ID})`)
}

/** The deliveries to filtered subscriptions, decided in memory (subscription-filters.ts): three parallel lists. */
export interface PlannedDeliveries {
  subscriptionIds: number[]
  eventIds: number[]
  /** Null: the event itself; `unmatched`: an `mls.listing_removed` in its place. */
  variants: ('unmatched' | null)[]
}

/**
 * Creates the deliveries of events just claimed for fan-out, in one statement, under
 * holdFanOutLock: an `mls.*` event to every active subscription for it without a filter, of
 * every tenant, and to the filtered ones `planned` names; the others to the owning tenant's
 * subscriptions only (a filter concerns `mls.*` events alone). A suspended agency's
 * subscriptions get none, nor one disabled or deleted since it was planned, nor an unsuspended
 * agency's an event raised before its suspension was lifted (tenants.unsuspended_at).
 */
export async function createDeliveries(tx: Database, batch: readonly UndispatchedEvent[], planned: PlannedDeliveries): Promise<number> {
  if (batch.length === 0) return 0
  const ids = `{${batch.map((event) => event.id).join(',')}}`
  const mlsWide = `{${MLS_WIDE_EVENTS.join(',')}}`
  const [row] = await queryRows<{ deliveries: number }>(
    tx,
    sql`with fanned as (
          insert into webhook_deliveries (subscription_id, event_id, variant)
          select s.id, e.id, null
          from events e
          join webhook_subscriptions s
            on s.is_active
           and s.events @> array[e.type]
           and ((e.type = any(${mlsWide}::text[]) and s.filter is null) or (e.type <> all(${mlsWide}::text[]) and s.tenant_id = e.tenant_id))
          join tenants t on t.id = s.tenant_id and t.suspended_at is null and (t.unsuspended_at is null or e.created_at >= t.unsuspended_at)
          where e.id = any(${ids}::bigint[])
          union all
          select s.id, p.event_id, p.variant
          from unnest(${`{${planned.subscriptionIds.join(',')}}`}::int[], ${`{${planned.eventIds.join(',')}}`}::bigint[], ${`{${planned.variants.map((v) => v ?? 'NULL').join(',')}}`}::text[])
            as p(subscription_id, event_id, variant)
          join webhook_subscriptions s on s.id = p.subscription_id and s.is_active
          join events e on e.id = p.event_id
          join tenants t on t.id = s.tenant_id and t.suspended_at is null and (t.unsuspended_at is null or e.created_at >= t.unsuspended_at)
          on conflict (event_id, subscription_id) do nothing
          returning 1
        )
        select count(*)::int as deliveries from fanned`,
  )
  const created = row?.deliveries ?? 0
  if (created > 0) await tx.execute(sql`select pg_notify(${DELIVERIES_CHANNEL}, '')`)
  return created
}

/** The delivery of a test event, claimed at once by the request that sends it (see WebhooksService.test). */
export async function insertClaimedTestDelivery(
  tx: Database,
  values: { subscriptionId: number; eventId: number; leaseToken: string; leaseEndsAt: Date },
): Promise<number> {
  const [delivery] = await tx
    .insert(webhookDeliveries)
    .values({
      subscriptionId: values.subscriptionId,
      eventId: values.eventId,
      trigger: 'test',
      attempts: 1,
      leaseToken: values.leaseToken,
      nextAttemptAt: values.leaseEndsAt,
    })
    .returning({ id: webhookDeliveries.id })
  return delivery!.id
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
    variant: DeliveryVariant | null
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
        returning d.id::float8 as id, d.subscription_id, d.attempts, d.trigger, d.variant,
                  s.url, s.secret_sealed, s.failing_since is not null as failing,
                  e.id::float8 as event_id, e.created_at as event_created_at,
                  case when d.variant = 'unmatched' then ${UNMATCHED_EVENT} else e.type end as event_type,
                  case when d.variant = 'unmatched' then jsonb_build_object('id', e.subject->'before'->'id', 'reason', 'unmatched') else e.data end as event_data`,
  )
  return rows.map((row) => ({
    id: Number(row.id),
    subscriptionId: row.subscription_id,
    attempt: row.attempts,
    leaseToken: token,
    trigger: row.trigger,
    variant: row.variant,
    url: row.url,
    secretSealed: row.secret_sealed,
    subscriptionFailing: row.failing,
    event: { id: Number(row.event_id), type: row.event_type, createdAt: new Date(row.event_created_at), data: row.event_data },
  }))
}

/**
 * Deletes up to `limit` deliveries done more than `days` ago (their last attempt), oldest first,
 * with their attempts (the foreign key cascades), when no delivery of their event is pending any
 * more; how many.
 * A delivery is never pending again once it has succeeded or been given up, so the check holds;
 * it has at most one attempt per entry of the retry schedule, plus one, which bounds the statement.
 * A delivery is fanned out after its event, so its event is older than `days` too.
 */
export async function deleteFinishedDeliveries(db: Database, days: number, limit: number): Promise<number> {
  const [row] = await queryRows<{ deleted: number }>(
    db,
    sql`with finished as (
          select d.id from webhook_deliveries d
          where d.created_at < now() - ${days}::int * interval '1 day'
            and d.status <> 'pending'
            and not exists (select 1 from webhook_deliveries p where p.event_id = d.event_id and p.status = 'pending')
            -- Counted from when it was done, its last attempt: retries may have gone on for days.
            and not exists (select 1 from webhook_attempts a where a.delivery_id = d.id and a.created_at >= now() - ${days}::int * interval '1 day')
          order by d.created_at
          limit ${limit}::int
          for update skip locked
        ),
        deleted as (delete from webhook_deliveries where id in (select id from finished) returning 1)
        select count(*)::int as deleted from deleted`,
  )
  return row?.deleted ?? 0
}

/** An attempt made, to be recorded with others by recordAttempts. */
export interface AttemptToRecord {
  claimed: ClaimedDelivery
  outcome: AttemptOutcome
  /** When the next attempt is due; null gives the delivery up unless it succeeded. */
  retryAt: Date | null
  /** False for test events, which leave the subscription's health alone. */
  updatesHealth: boolean
}

/**
 * Records an attempt's outcome: the delivery's new state, the log entry, and what it says of
 * the subscription (a success clears its failing streak; 410 or 5 days of failures switch it
 * off). Undefined when the lease was lost (another worker took the delivery, or the
 * subscription was deleted meanwhile): the outcome is then not recorded. POST
 * /webhooks/{id}/test answers with the entry; the workers record theirs by recordAttempts.
 */
export async function recordAttempt(db: Database, attempt: AttemptToRecord): Promise<AttemptRow | undefined> {
  const { claimed, outcome, retryAt } = attempt
  const wanted = outcome.succeeded ? 'succeeded' : retryAt === null ? 'failed' : 'pending'

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
    // The attempt's own outcome; whether another follows is next_attempt_at's to say.
    const status = outcome.succeeded ? 'succeeded' : 'failed'
    const nextAttemptAt = delivery.status === 'pending' ? retryAt : null
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
    if (attempt.updatesHealth && (!outcome.succeeded || claimed.subscriptionFailing))
      await updateSubscriptionHealth(tx, claimed.subscriptionId, healthOf(outcome))
    return entry
  })
}

/**
 * Records many attempts, as recordAttempt does each, in one statement while they all
 * succeeded: the deliveries' new states, their log entries, and the failing streaks their
 * successes end. An attempt whose lease was lost is not recorded, nor counted for its
 * subscription. A subscription with a failure among them has its outcomes applied one by one,
 * in the order they came, in the same transaction, so its health ends as if each had been
 * recorded alone; consecutive outcomes of a kind are applied once, as a repeat changes nothing.
 * How many were recorded.
 */
export async function recordAttempts(db: Database, attempts: readonly AttemptToRecord[]): Promise<number> {
  if (attempts.length === 0) return 0
  const failing = new Set(attempts.filter((a) => a.updatesHealth && !a.outcome.succeeded).map((a) => a.claimed.subscriptionId))
  const rows = attempts.map(({ claimed, outcome, retryAt, updatesHealth }) => ({
    id: claimed.id,
    token: claimed.leaseToken,
    wanted: outcome.succeeded ? 'succeeded' : retryAt === null ? 'failed' : 'pending',
    retry_at: retryAt?.toISOString() ?? null,
    // Successes of a subscription none of these failed for end its streak here; the others' outcomes go one by one below.
    clears: updatesHealth && !failing.has(claimed.subscriptionId),
    subscription_id: claimed.subscriptionId,
    event_id: claimed.event.id,
    event_type: claimed.event.type,
    trigger: claimed.trigger,
    attempt: claimed.attempt,
    status: outcome.succeeded ? 'succeeded' : 'failed',
    response_status_code: outcome.statusCode,
    response_body: outcome.responseBody,
    error: outcome.error,
    duration_ms: outcome.durationMs,
  }))
  const record = async (tx: Database) =>
    queryRows<{ id: number }>(
      tx,
      sql`with outcome as (
            select * from json_to_recordset(${JSON.stringify(rows)}::json) as o(
              id bigint, token text, wanted text, retry_at timestamptz, clears boolean, subscription_id int, event_id bigint,
              event_type text, trigger text, attempt int, status text, response_status_code int, response_body text,
              error text, duration_ms int)
          ),
          recorded as (
            update webhook_deliveries d
            set status = case when d.status = 'pending' then outcome.wanted else d.status end,
                lease_token = null,
                next_attempt_at = coalesce(outcome.retry_at, d.next_attempt_at)
            from outcome
            where d.id = outcome.id and d.lease_token = outcome.token
            returning d.id, d.status
          ),
          logged as (
            insert into webhook_attempts (delivery_id, subscription_id, event_id, event_type, trigger, attempt, status,
                                          response_status_code, response_body, error, duration_ms, next_attempt_at)
            select o.id, o.subscription_id, o.event_id, o.event_type, o.trigger, o.attempt, o.status,
                   o.response_status_code, o.response_body, o.error, o.duration_ms,
                   case when r.status = 'pending' then o.retry_at end
            from outcome o join recorded r on r.id = o.id
            order by o.id
          ),
          cleared as (
            update webhook_subscriptions s set failing_since = null
            from (select id from webhook_subscriptions
                  where failing_since is not null
                    and id in (select o.subscription_id from outcome o join recorded r on r.id = o.id where o.clears)
                  order by id for no key update skip locked) locked
            where s.id = locked.id
          )
          select id::float8 as id from recorded`,
    )
  // The subscriptions whose health these attempts change: those they failed for, and those
  // whose failing streak a success ends. Every writer of these rows takes them in the order of
  // their ids, before anything else, so two workers never wait on each other in a circle: the
  // statement's own order (the plan's) or the deliveries first could be any. A streak that began
  // after the claim is found by the statement itself, after the deliveries: it ends it only if
  // no other writer holds the subscription (skip locked), as one switching it off would while it
  // gives up its deliveries, these among them. A success meeting a concurrent writer of its
  // subscription's health is a race either way round; the next success ends the streak.
  const changed = [
    ...new Set(
      attempts.filter((a) => a.updatesHealth && (failing.has(a.claimed.subscriptionId) || a.claimed.subscriptionFailing)).map((a) => a.claimed.subscriptionId),
    ),
  ].sort((a, b) => a - b)
  if (changed.length === 0) return (await record(db)).length

  return db.transaction(async (tx) => {
    await tx.execute(sql`select id from webhook_subscriptions where id = any(${`{${changed.join(',')}}`}::int[]) order by id for no key update`)
    const recorded = new Set((await record(tx)).map((row) => Number(row.id)))
    for (const subscriptionId of [...failing].sort((a, b) => a - b)) {
      let previous: Health | undefined
      for (const attempt of attempts) {
        if (attempt.claimed.subscriptionId !== subscriptionId || !attempt.updatesHealth || !recorded.has(attempt.claimed.id)) continue
        const health = healthOf(attempt.outcome)
        if (health !== previous) await updateSubscriptionHealth(tx, subscriptionId, health)
        previous = health
      }
    }
    return recorded.size
  })
}

/** What an attempt says of its subscription's health. */
type Health = 'succeeded' | 'failed' | 'gone'

function healthOf(outcome: AttemptOutcome): Health {
  return outcome.succeeded ? 'succeeded' : outcome.gone ? 'gone' : 'failed'
}

async function updateSubscriptionHealth(tx: Database, subscriptionId: number, health: Health): Promise<void> {
  const subscription = eq(webhookSubscriptions.id, subscriptionId)
  if (health === 'succeeded') {
    await tx
      .update(webhookSubscriptions)
      .set({ failingSince: null })
      .where(and(subscription, isNotNull(webhookSubscriptions.failingSince)))
    return
  }
  if (health === 'gone') {
    await disableSubscription(tx, subscriptionId, 'The receiver answered 410 Gone: deliveries stopped. Create a new subscription to receive events again.')
    return
  }
  const [row] = await tx
    .update(webhookSubscriptions)
    .set({ failingSince: sql`coalesce(${webhookSubscriptions.failingSince}, now())` })
    .where(subscription)
    .returning({ failingSince: webhookSubscriptions.failingSince, isActive: webhookSubscriptions.isActive })
  if (row?.isActive && row.failingSince && failedTooLong(row.failingSince)) {
    await disableSubscription(tx, subscriptionId, 'No delivery succeeded for 5 days: deliveries stopped. Create a new subscription to receive events again.')
  }
}

/**
 * Switches a subscription off and gives up its pending deliveries, with no fan-out under way:
 * one that read the subscription active before this commits would otherwise add deliveries
 * after they were given up, and they would be sent.
 */
async function disableSubscription(tx: Database, subscriptionId: number, reason: string): Promise<void> {
  await lockOutFanOut(tx)
  await tx
    .update(webhookSubscriptions)
    .set({ isActive: false, disabledReason: reason, disabledAt: sql`now()` })
    .where(and(eq(webhookSubscriptions.id, subscriptionId), eq(webhookSubscriptions.isActive, true)))
  await cancelPendingDeliveries(tx, subscriptionId)
}

/**
 * An agency is suspended: its pending deliveries are given up, as a switched-off subscription's
 * are, and no fan-out running now adds more (see FAN_OUT_LOCK_ID); fan-outs after this
 * transaction pass the agency over. An attempt in flight finishes.
 */
export async function giveUpDeliveriesOfTenant(tx: Database, tenantId: number): Promise<void> {
  await lockOutFanOut(tx)
  await giveUpPendingDeliveries(tx, sql`subscription_id in (select id from webhook_subscriptions where tenant_id = ${tenantId}::int)`)
}

/** Moves the tenant's failing streaks later by the time since `since`: the time they were paused. */
export async function postponeFailingStreaks(tx: Database, tenantId: number, since: Date): Promise<void> {
  await tx.execute(sql`
    update webhook_subscriptions set failing_since = failing_since + (now() - ${since.toISOString()}::timestamptz)
    where tenant_id = ${tenantId}::int and failing_since is not null`)
}

/**
 * Gives up a subscription's pending deliveries. One whose attempt is in flight is left to its
 * worker's recordAttempt, which sees the subscription inactive through its next claim.
 */
async function cancelPendingDeliveries(tx: Database, subscriptionId: number): Promise<void> {
  await giveUpPendingDeliveries(tx, sql`subscription_id = ${subscriptionId}::int`)
}

/**
 * Gives up the pending deliveries `which` selects: the last log entry of each no longer names a
 * next attempt, while earlier entries keep the time their retry was due.
 */
async function giveUpPendingDeliveries(tx: Database, which: SQL): Promise<void> {
  await tx.execute(sql`
    with cancelled as (
      update webhook_deliveries set status = 'failed'
      where ${which} and status = 'pending'
      returning id
    )
    update webhook_attempts a set next_attempt_at = null
    from cancelled
    where a.delivery_id = cancelled.id and a.next_attempt_at is not null
      and a.attempt = (select max(latest.attempt) from webhook_attempts latest where latest.delivery_id = cancelled.id)`)
}
