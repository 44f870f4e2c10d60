import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { eventRetentionJob, RETENTION_BATCH } from '../../src/modules/events/event-retention.job.js'
import type { SubscribableEvent } from '../../src/modules/events/event-types.js'
import type { DeliveryLogEntry } from '../../src/modules/webhooks/webhooks.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, type Tenant } from '../helpers/factories.js'
import { jobContext, runWhileWorkRemains } from '../helpers/jobs.js'
import { startReceiver, subscribe, type Receiver } from '../helpers/webhooks.js'

/** A failed attempt is retried an hour later: its delivery stays pending through the test. */
const ENV = { ALLOW_PRIVATE_NETWORK: 'true', WEBHOOK_RETRY_SCHEDULE: '1h', WEBHOOK_TIMEOUT_MS: '5000' }

describe('event retention', () => {
  let t: TestApp
  let accepting: Receiver
  let failing: Receiver
  let gone: Receiver
  let delivered: Tenant
  let retried: Tenant
  let givenUp: Tenant
  let unsubscribed: Tenant

  before(async () => {
    t = await buildTestApp(ENV)
    accepting = await startReceiver(() => ({ status: 202 }))
    failing = await startReceiver(() => ({ status: 503 }))
    gone = await startReceiver(() => ({ status: 410 }))
    delivered = await createTenant(t.app)
    retried = await createTenant(t.app)
    givenUp = await createTenant(t.app)
    unsubscribed = await createTenant(t.app)
  })
  after(async () => {
    await t.close()
    await Promise.all([accepting.close(), failing.close(), gone.close()])
  })

  /** An outbox event of the tenant, as a publication writes one. */
  async function writeEvent(tenant: Tenant): Promise<number> {
    const [row] = await queryRows<{ id: number }>(
      t.db,
      sql`insert into events (type, tenant_id, data) values ('property.published', ${tenant.tenantId}::int, '{}') returning id::float8 as id`,
    )
    return row!.id
  }

  /** Fans out the new events and makes one attempt of every due delivery, as the worker's jobs would. */
  async function deliverOnce(): Promise<void> {
    await t.app.services.webhooks.fanOut(100)
    const claimed = await t.app.services.webhooks.claimDue({ limit: 100, perSubscription: 100, busySubscriptions: [] })
    await Promise.all(claimed.map((delivery) => t.app.services.webhooks.attempt(delivery)))
  }

  /** Moves events, the deliveries fanned out from them and their attempts, `days` into the past. */
  async function backdate(eventIds: number[], days: number): Promise<void> {
    const ids = `{${eventIds.join(',')}}`
    await t.db.execute(sql`update events set created_at = now() - ${days}::int * interval '1 day' where id = any(${ids}::bigint[])`)
    await t.db.execute(sql`update webhook_deliveries set created_at = now() - ${days}::int * interval '1 day' where event_id = any(${ids}::bigint[])`)
    await t.db.execute(sql`update webhook_attempts set created_at = now() - ${days}::int * interval '1 day' where event_id = any(${ids}::bigint[])`)
  }

  const eventIdsOf = async (table: 'events' | 'webhook_deliveries' | 'webhook_attempts') => {
    const column = table === 'events' ? sql`id` : sql`event_id`
    const rows = await queryRows<{ id: number }>(t.db, sql`select ${column}::float8 as id from ${sql.identifier(table)} order by 1`)
    return rows.map((row) => row.id)
  }

  async function logOf(tenant: Tenant, subscriptionId: number): Promise<DeliveryLogEntry[]> {
    const response = await t.app.inject({ method: 'GET', url: `/webhooks/${subscriptionId}/logs`, headers: tenant.headers })
    assert.equal(response.statusCode, 200, response.body)
    return response.json<{ items: DeliveryLogEntry[] }>().items
  }

  it('deletes old events with their finished deliveries and attempts, and keeps recent, pending and undispatched ones', async () => {
    const events: SubscribableEvent[] = ['property.published']
    const deliveredHook = await subscribe(t.app, delivered, { url: accepting.url, events })
    const retriedHook = await subscribe(t.app, retried, { url: failing.url, events })
    // The same event also reaches a receiver that takes it: that delivery is kept while the other is pending.
    const retriedAlsoHook = await subscribe(t.app, retried, { url: accepting.url, events })
    await subscribe(t.app, givenUp, { url: gone.url, events })

    const oldDelivered = await writeEvent(delivered)
    const recentDelivered = await writeEvent(delivered)
    const oldPending = await writeEvent(retried)
    const oldGivenUp = await writeEvent(givenUp)
    const oldUnwanted = await writeEvent(unsubscribed)
    await deliverOnce()
    const oldUndispatched = await writeEvent(delivered)
    await backdate([oldDelivered, oldPending, oldGivenUp, oldUnwanted, oldUndispatched], 31)

    assert.deepEqual(await eventIdsOf('webhook_deliveries'), [oldDelivered, recentDelivered, oldPending, oldPending, oldGivenUp])
    assert.deepEqual(await eventIdsOf('webhook_attempts'), [oldDelivered, recentDelivered, oldPending, oldPending, oldGivenUp])
    assert.equal((await logOf(delivered, deliveredHook.id)).length, 2)

    // Two deliveries (the delivered one, the given-up one), then two events (theirs, and the one no one wanted).
    assert.deepEqual(await runWhileWorkRemains(eventRetentionJob, jobContext(t)), [2, 3])

    assert.deepEqual(await eventIdsOf('events'), [recentDelivered, oldPending, oldUndispatched])
    assert.deepEqual(await eventIdsOf('webhook_deliveries'), [recentDelivered, oldPending, oldPending])
    assert.deepEqual(await eventIdsOf('webhook_attempts'), [recentDelivered, oldPending, oldPending])
    assert.deepEqual(
      (await logOf(delivered, deliveredHook.id)).map((entry) => entry.event_id),
      [recentDelivered],
    )
    const pending = await logOf(retried, retriedHook.id)
    assert.ok(pending[0]!.next_attempt_at, 'the failed attempt is to be retried')
    assert.deepEqual(
      pending.map((entry) => [entry.event_id, entry.status]),
      [[oldPending, 'failed']],
    )
    assert.deepEqual(
      (await logOf(retried, retriedAlsoHook.id)).map((entry) => [entry.event_id, entry.status]),
      [[oldPending, 'succeeded']],
    )
  })

  it('deletes in batches of at most RETENTION_BATCH rows, deliveries first', async () => {
    const [hook] = await queryRows<{ id: number }>(t.db, sql`select id from webhook_subscriptions where tenant_id = ${delivered.tenantId}::int`)
    const count = RETENTION_BATCH + RETENTION_BATCH / 2
    // Old events already delivered, each with its delivery and its one attempt, written directly.
    await t.db.execute(sql`
      with written as (
        insert into events (type, tenant_id, data, created_at, dispatched_at)
        select 'property.published', ${delivered.tenantId}::int, '{}', now() - interval '40 days', now() - interval '40 days'
        from generate_series(1, ${count}::int)
        returning id
      ),
      deliveries as (
        insert into webhook_deliveries (subscription_id, event_id, status, attempts, created_at)
        select ${hook!.id}::int, id, 'succeeded', 1, now() - interval '40 days' from written
        returning id, event_id
      )
      insert into webhook_attempts (delivery_id, subscription_id, event_id, event_type, trigger, attempt, status, response_status_code, duration_ms, created_at)
      select id, ${hook!.id}::int, event_id, 'property.published', 'event', 1, 'succeeded', 202, 5, now() - interval '40 days' from deliveries`)
    const [before] = await queryRows<{ events: number }>(t.db, sql`select count(*)::int as events from events`)

    const half = RETENTION_BATCH / 2
    assert.deepEqual(await runWhileWorkRemains(eventRetentionJob, jobContext(t)), [RETENTION_BATCH, half, RETENTION_BATCH, half])

    const [left] = await queryRows<{ events: number; deliveries: number; attempts: number }>(
      t.db,
      sql`select (select count(*)::int from events) as events,
                 (select count(*)::int from webhook_deliveries) as deliveries,
                 (select count(*)::int from webhook_attempts) as attempts`,
    )
    assert.deepEqual(left, { events: before!.events - count, deliveries: 3, attempts: 3 })
  })

  it('keeps events for EVENT_RETENTION_DAYS, as configured', async () => {
    const write = async (days: number) => {
      const [row] = await queryRows<{ id: number }>(
        t.db,
        sql`insert into events (type, tenant_id, data, created_at, dispatched_at)
            values ('property.published', ${unsubscribed.tenantId}::int, '{}', now() - ${days}::int * interval '1 day', now())
            returning id::float8 as id`,
      )
      return row!.id
    }
    const older = await write(8)
    const younger = await write(6)
    const weekly = { ...jobContext(t), config: { ...t.config, retention: { ...t.config.retention, eventDays: 7 } } }
    assert.deepEqual(await runWhileWorkRemains(eventRetentionJob, weekly), [1])
    const ids = await eventIdsOf('events')
    assert.ok(!ids.includes(older))
    assert.ok(ids.includes(younger))
    assert.equal(t.config.retention.eventDays, 30)
  })
})
