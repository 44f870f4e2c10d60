import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { openDatabase, queryRows, type DatabaseHandle } from '../../src/db/client.js'
import { deliveryLeaseMs } from '../../src/modules/webhooks/delivery-policy.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { engine } from '../helpers/database.js'
import { createTenant, type Tenant } from '../helpers/factories.js'
import {
  startReceiver,
  startWebhookWorker,
  subscribe,
  verifyDelivery,
  waitFor,
  waitForOutboxDrained,
  type Receiver,
  type RunningWorker,
} from '../helpers/webhooks.js'

/**
 * Quick retries, and attempts given 3 s: on a busy machine an answer may come late, and a late
 * answer is a retry (with the same webhook-id), which the assertions below allow.
 */
const ENV = { ALLOW_PRIVATE_NETWORK: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,500ms,1s,2s,2s', WEBHOOK_TIMEOUT_MS: '3000' }

/** Writes `count` property.published events for the tenant to the outbox, as publications would. */
async function writeEvents(t: TestApp, tenant: Tenant, count: number): Promise<void> {
  await t.db.execute(
    sql`insert into events (type, tenant_id, data)
        select 'property.published', ${tenant.tenantId}::int, jsonb_build_object('property_id', n)
        from generate_series(1, ${count}::int) as n`,
  )
}

/**
 * None lost: every event's delivery succeeded, with exactly one successful attempt, and the
 * receiver accepted every webhook-id. None sent twice: the receiver got no more requests for
 * an event than the attempts logged for it. (An attempt that timed out after the receiver
 * had the request is followed by a logged retry with the same webhook-id: receivers
 * deduplicate on it, as Standard Webhooks says. A busy test machine can make one happen.)
 */
async function assertEachSentOnce(t: TestApp, receiver: Receiver, subscriptionId: number, events: number): Promise<void> {
  const rows = await queryRows<{ event_id: number; delivery: string; attempts: number; succeeded: number }>(
    t.db,
    sql`select d.event_id::float8 as event_id, d.status as delivery,
               count(a.id)::int as attempts, count(a.id) filter (where a.status = 'succeeded')::int as succeeded
        from webhook_deliveries d left join webhook_attempts a on a.delivery_id = d.id
        where d.subscription_id = ${subscriptionId}::int
        group by d.id`,
  )
  assert.equal(rows.length, events)
  const received = new Map<string, number>()
  for (const request of receiver.requests) {
    const id = String(request.headers['webhook-id'])
    received.set(id, (received.get(id) ?? 0) + 1)
  }
  const accepted = new Set(receiver.delivered().map((request) => String(request.headers['webhook-id'])))
  for (const row of rows) {
    const id = `msg_${row.event_id}`
    assert.equal(row.delivery, 'succeeded', id)
    assert.equal(row.succeeded, 1, id)
    assert.ok(accepted.has(id), `${id} never accepted`)
    assert.ok(received.get(id)! <= row.attempts, `${id}: ${received.get(id)} requests for ${row.attempts} attempts`)
  }
  assert.equal(received.size, events)
}

describe('several webhook workers on one database', () => {
  let t: TestApp
  let agencies = 0
  const cleanups: (() => Promise<void>)[] = []

  before(async () => {
    t = await buildTestApp(ENV)
  })
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
    await t.close()
  })

  /** Each test its own agency, so no test's events reach another's subscription. */
  const newAgency = () => createTenant(t.app, { email: `workers-${++agencies}@agency.example` })

  /** A second connection pool to the same database where there is a server; PGlite has one. */
  async function secondHandle(): Promise<DatabaseHandle> {
    if (!t.database.url) return t.database.handle
    const handle = await openDatabase({ databaseUrl: t.database.url, pgliteDir: undefined, poolSize: 5 })
    cleanups.push(() => handle.close())
    return handle
  }

  it('two workers deliver 1,000 events, none lost and none twice', async () => {
    const agency = await newAgency()
    const receiver = await startReceiver(() => ({ status: 200 }))
    cleanups.push(() => receiver.close())
    const subscription = await subscribe(t.app, agency, { url: receiver.url, events: ['property.published'] })
    await writeEvents(t, agency, 1000)
    const workers: RunningWorker[] = [startWebhookWorker(t.database.handle, t.config), startWebhookWorker(await secondHandle(), t.config)]
    try {
      // Drained: every delivery recorded, so nothing more can arrive.
      await waitForOutboxDrained(t.db, 120_000)
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()))
    }
    await assertEachSentOnce(t, receiver, subscription.id, 1000)
    for (const request of receiver.requests.slice(0, 20)) verifyDelivery(subscription.secret, request)
  })

  it('completes the deliveries of a worker that died after claiming them, once its lease runs out', async () => {
    const agency = await newAgency()
    const receiver = await startReceiver(() => ({ status: 200 }))
    cleanups.push(() => receiver.close())
    const subscription = await subscribe(t.app, agency, { url: receiver.url, events: ['property.published'] })
    await writeEvents(t, agency, 5)
    await t.app.services.webhooks.fanOut(100)
    // A worker claims them and dies before sending: nothing more happens on its side.
    const lost = await t.app.services.webhooks.claimDue({ limit: 100, perSubscription: 100, busySubscriptions: [] })
    assert.equal(lost.length, 5)
    const claimedAt = Date.now()

    const survivor = startWebhookWorker(t.database.handle, t.config)
    try {
      await waitForOutboxDrained(t.db, 60_000)
    } finally {
      await survivor.stop()
    }
    assert.ok(receiver.requests[0]!.receivedAt - claimedAt >= deliveryLeaseMs(t.config.webhookTimeoutMs) - 100, 'not before the lease ran out')
    await assertEachSentOnce(t, receiver, subscription.id, 5)
    const firstAttempts = await queryRows<{ first: number }>(
      t.db,
      sql`select min(attempt)::int as first from webhook_attempts where subscription_id = ${subscription.id}::int group by delivery_id`,
    )
    // The dead worker's attempt 1 never happened; the survivor's first is attempt 2.
    assert.deepEqual(
      firstAttempts.map((row) => row.first),
      [2, 2, 2, 2, 2],
    )
  })

  it(
    'a worker process killed mid-batch leaves its deliveries to another, each delivered once',
    { skip: engine === 'pglite' && 'a second process needs a database server (PGlite is in this process)' },
    async () => {
      // The receiver holds the first worker's requests unanswered until it is killed.
      let holding = true
      const agency = await newAgency()
      const receiver = await startReceiver(() => (holding ? 'hang' : { status: 200 }))
      cleanups.push(() => receiver.close())
      const subscription = await subscribe(t.app, agency, { url: receiver.url, events: ['property.published'] })
      await writeEvents(t, agency, 20)

      const dataDir = mkdtempSync(path.join(tmpdir(), 'mls-worker-'))
      cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }))
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/worker/main.ts'], {
        env: { ...process.env, ...ENV, DATABASE_URL: t.database.url, DATA_DIR: dataDir, SECRET_KEY: t.config.secretKey, LOG_LEVEL: 'silent' },
        stdio: 'ignore',
      })
      const exited = new Promise((resolve) => child.once('exit', resolve))
      let inFlight = 0
      await waitFor(
        async () => {
          const [row] = await queryRows<{ n: number }>(
            t.db,
            sql`select count(*)::int as n from webhook_deliveries where lease_token is not null and status = 'pending'`,
          )
          inFlight = row!.n
          return inFlight >= 8
        },
        30_000,
        'the child worker to claim deliveries',
      )
      child.kill('SIGKILL')
      await exited
      holding = false

      const survivor = startWebhookWorker(t.database.handle, t.config)
      try {
        await waitForOutboxDrained(t.db, 60_000)
      } finally {
        await survivor.stop()
      }
      await assertEachSentOnce(t, receiver, subscription.id, 20)
      const [retried] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from webhook_attempts where attempt = 2 and trigger = 'event'`)
      assert.ok(retried!.n >= Math.min(inFlight, 8), `${retried!.n} deliveries taken over from the dead worker`)
    },
  )
})
