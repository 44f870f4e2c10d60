import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import pg from 'pg'
import { openDatabase, queryRows, type DatabaseHandle } from '../../src/db/client.js'
import { deliveryLeaseMs } from '../../src/modules/webhooks/delivery-policy.js'
import type { AttemptOutcome } from '../../src/modules/webhooks/webhook-sender.js'
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
import { nodeArguments } from '../helpers/code-tree.js'

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
      const child = spawn(process.execPath, nodeArguments('src/worker/main'), {
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

describe('webhook workers woken by notices', { skip: engine === 'pglite' && 'PGlite has no notices from other sessions: workers poll' }, () => {
  let t: TestApp

  before(async () => {
    // An hour between polls: whatever arrives sooner was announced.
    t = await buildTestApp({ ...ENV, WEBHOOK_POLL_INTERVAL_MS: '3600000' })
  })
  after(() => t.close())

  it('delivers an event written while the worker waits, long before its next poll', async () => {
    const agency = await createTenant(t.app, { email: 'woken@agency.example' })
    const receiver = await startReceiver(() => ({ status: 200 }))
    const subscription = await subscribe(t.app, agency, { url: receiver.url, events: ['property.published'] })
    const worker = startWebhookWorker(t.database.handle, t.config)
    try {
      // Each event is written once the one before has been delivered, when both jobs have gone
      // back to waiting: only the outbox's notice and then fan-out's can bring it in time.
      for (let written = 1; written <= 3; written++) {
        await writeEvents(t, agency, 1)
        await waitFor(() => receiver.delivered().length === written, 30_000, `event ${written}`)
        await waitForOutboxDrained(t.db)
      }
    } finally {
      await worker.stop()
      await receiver.close()
    }
    await assertEachSentOnce(t, receiver, subscription.id, 3)
  })
})

describe('attempts recorded in one batch', () => {
  let t: TestApp

  before(async () => {
    t = await buildTestApp(ENV)
  })
  after(() => t.close())

  const outcome = (kind: 'succeeded' | 'failed' | 'gone'): AttemptOutcome => ({
    succeeded: kind === 'succeeded',
    statusCode: kind === 'succeeded' ? 200 : kind === 'gone' ? 410 : 500,
    responseBody: '',
    error: kind === 'succeeded' ? null : 'http_status: The receiver answered non-2xx.',
    durationMs: 1,
    retryAfterMs: undefined,
    gone: kind === 'gone',
  })

  it('leaves each subscription, delivery and log as if each attempt had been recorded alone, in the order given', async () => {
    const agency = await createTenant(t.app, { email: 'batch@agency.example' })
    const names = ['healed', 'failing', 'too long', 'gone', 'failed then healed', 'healed then failed', 'cancelled', 'lost'] as const
    type Name = (typeof names)[number]
    const subscriptions = new Map<Name, number>()
    for (const [i, name] of names.entries()) {
      const created = await subscribe(t.app, agency, { url: `http://127.0.0.1:9/hooks/${i}`, events: ['property.published'] })
      subscriptions.set(name, created.id)
    }
    const id = (name: Name) => subscriptions.get(name)!
    await t.db.execute(sql`update webhook_subscriptions set failing_since = now() - interval '1 day' where id = ${id('healed')}::int`)
    await t.db.execute(sql`update webhook_subscriptions set failing_since = now() - interval '5 days 1 minute' where id = ${id('too long')}::int`)
    await writeEvents(t, agency, 3)
    await t.app.services.webhooks.fanOut(100)
    const claimed = await t.app.services.webhooks.claimDue({ limit: 100, perSubscription: 100, busySubscriptions: [] })
    assert.equal(claimed.length, names.length * 3)
    const of = (name: Name) => claimed.filter((delivery) => delivery.subscriptionId === id(name))

    // Meanwhile one delivery is given up (its subscription switched off) and one claimed again by another worker.
    const [cancelled] = of('cancelled')
    await t.db.execute(sql`update webhook_deliveries set status = 'failed' where id = ${cancelled!.id}::bigint`)
    const [lost] = of('lost')
    await t.db.execute(sql`update webhook_deliveries set lease_token = 'another worker' where id = ${lost!.id}::bigint`)

    const retryAt = new Date(Date.now() + 3_600_000)
    const attempt = (name: Name, index: number, kind: 'succeeded' | 'failed' | 'gone') => ({
      claimed: of(name)[index]!,
      outcome: outcome(kind),
      retryAt: kind === 'failed' ? retryAt : null,
      updatesHealth: true,
    })
    const recorded = await t.app.services.webhooks.recordAttempts([
      attempt('healed', 0, 'succeeded'),
      attempt('failing', 0, 'failed'),
      attempt('too long', 0, 'failed'),
      attempt('gone', 0, 'succeeded'),
      attempt('failed then healed', 0, 'failed'),
      attempt('healed then failed', 0, 'succeeded'),
      attempt('failing', 1, 'failed'),
      attempt('gone', 1, 'gone'),
      attempt('failed then healed', 1, 'succeeded'),
      attempt('healed then failed', 1, 'failed'),
      attempt('healed', 1, 'succeeded'),
      attempt('gone', 2, 'succeeded'),
      attempt('cancelled', 0, 'succeeded'),
      attempt('lost', 0, 'succeeded'),
    ])
    assert.equal(recorded, 13, 'all but the one whose lease was lost')

    const health = await queryRows<{ id: number; failing: boolean; is_active: boolean; disabled_reason: string | null }>(
      t.db,
      sql`select id, failing_since is not null as failing, is_active, disabled_reason from webhook_subscriptions where tenant_id = ${agency.tenantId}::int`,
    )
    const state = (name: Name) => health.find((row) => row.id === id(name))!
    assert.deepEqual(
      names.map((name) => [name, state(name).failing, state(name).is_active]),
      [
        ['healed', false, true],
        ['failing', true, true],
        ['too long', true, false],
        ['gone', false, false],
        ['failed then healed', false, true],
        ['healed then failed', true, true],
        ['cancelled', false, true],
        ['lost', false, true],
      ],
    )
    assert.match(state('too long').disabled_reason!, /5 days/)
    assert.match(state('gone').disabled_reason!, /410/)

    const deliveries = await queryRows<{ id: number; status: string; lease_token: string | null; attempts: number }>(
      t.db,
      sql`select d.id::float8 as id, d.status, d.lease_token, (select count(*)::int from webhook_attempts a where a.delivery_id = d.id) as attempts
          from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id
          where s.tenant_id = ${agency.tenantId}::int`,
    )
    const delivery = (claimedDelivery: { id: number }) => deliveries.find((row) => row.id === claimedDelivery.id)!
    assert.equal(delivery(of('healed')[0]!).status, 'succeeded')
    assert.equal(delivery(of('failing')[0]!).status, 'pending')
    assert.equal(delivery(of('cancelled')[0]!).status, 'failed', 'given up meanwhile, it stays given up')
    assert.equal(delivery(of('cancelled')[0]!).attempts, 1)
    assert.equal(delivery(of('lost')[0]!).attempts, 0, 'nothing recorded without the lease')
    assert.equal(delivery(of('lost')[0]!).lease_token, 'another worker')
    // Switched off: their deliveries not yet attempted are given up.
    for (const name of ['too long', 'gone'] as const) {
      for (const claimedDelivery of of(name)) assert.notEqual(delivery(claimedDelivery).status, 'pending', name)
    }
    // A failure's log entry names its retry, unless its subscription was switched off by it.
    const entries = await queryRows<{ subscription_id: number; status: string; next_attempt_at: Date | null }>(
      t.db,
      sql`select subscription_id, status, next_attempt_at from webhook_attempts where subscription_id in (${id('failing')}::int, ${id('too long')}::int)`,
    )
    assert.deepEqual(
      entries.map((entry) => [entry.subscription_id === id('failing') ? 'failing' : 'too long', entry.status, entry.next_attempt_at !== null]).sort(),
      [
        ['failing', 'failed', true],
        ['failing', 'failed', true],
        ['too long', 'failed', false],
      ],
    )
  })
})

describe('attempts recorded by workers at once', { skip: engine === 'pglite' && 'PGlite is one session: nothing waits on its locks' }, () => {
  let t: TestApp

  before(async () => {
    t = await buildTestApp(ENV)
  })
  after(() => t.close())

  const outcome = (succeeded: boolean): AttemptOutcome => ({
    succeeded,
    statusCode: succeeded ? 200 : 500,
    responseBody: '',
    error: succeeded ? null : 'http_status: The receiver answered non-2xx.',
    durationMs: 1,
    retryAfterMs: undefined,
    gone: false,
  })

  /**
   * Runs `during` while another session holds the subscription as an update of it does (for no
   * key update), then lets it go; `during` looks at the locks through a third session.
   */
  async function whileHeld(subscriptionId: number, during: (prober: pg.Client) => Promise<void>): Promise<void> {
    const holder = new pg.Client({ connectionString: t.database.url })
    const prober = new pg.Client({ connectionString: t.database.url })
    await Promise.all([holder.connect(), prober.connect()])
    try {
      await holder.query('begin')
      await holder.query('select id from webhook_subscriptions where id = $1 for no key update', [subscriptionId])
      await during(prober)
      await holder.query('commit')
    } finally {
      await Promise.all([holder.end(), prober.end()])
    }
  }
  const someoneWaits = async (prober: pg.Client) =>
    (await prober.query<{ n: number }>('select count(*)::int as n from pg_locks where not granted')).rows[0]!.n > 0

  it('takes the subscriptions it changes in the order of their ids, before any of them, so two workers never wait on each other in a circle', async () => {
    // A worker records a success that ends the failing streak of one subscription and a failure
    // of another with a lower id, while another session (a second worker, an agency's PATCH)
    // holds the lower one. Taking the higher one first and then waiting for the lower is how
    // two workers deadlock: the other may be waiting for the higher one while it holds the lower.
    const agency = await createTenant(t.app, { email: 'lock-order@agency.example' })
    const lower = await subscribe(t.app, agency, { url: 'http://127.0.0.1:9/hooks/lower', events: ['property.published'] })
    const higher = await subscribe(t.app, agency, { url: 'http://127.0.0.1:9/hooks/higher', events: ['property.published'] })
    await t.db.execute(sql`update webhook_subscriptions set failing_since = now() - interval '1 hour' where id = ${higher.id}::int`)
    await writeEvents(t, agency, 1)
    await t.app.services.webhooks.fanOut(100)
    const claimed = await t.app.services.webhooks.claimDue({ limit: 100, perSubscription: 100, busySubscriptions: [] })
    const of = (subscriptionId: number) => claimed.find((delivery) => delivery.subscriptionId === subscriptionId)!

    let recording: Promise<number> | undefined
    await whileHeld(lower.id, async (prober) => {
      recording = t.app.services.webhooks.recordAttempts([
        { claimed: of(higher.id), outcome: outcome(true), retryAt: null, updatesHealth: true },
        { claimed: of(lower.id), outcome: outcome(false), retryAt: new Date(Date.now() + 3_600_000), updatesHealth: true },
      ])
      await waitFor(() => someoneWaits(prober), 30_000, 'the recording waiting for the lower subscription')
      // While it waits for the lower one, the higher one is free.
      await prober.query('begin')
      await prober.query('select id from webhook_subscriptions where id = $1 for no key update nowait', [higher.id])
      await prober.query('rollback')
    })
    assert.equal(await recording, 2)
    const health = await queryRows<{ id: number; failing: boolean }>(
      t.db,
      sql`select id, failing_since is not null as failing from webhook_subscriptions where id in (${lower.id}::int, ${higher.id}::int) order by id`,
    )
    assert.deepEqual(
      health.map((row) => row.failing),
      [true, false],
    )
  })

  it('records a success whose subscription began failing since the claim without waiting for another writer of it', async () => {
    // Another worker switching the subscription off holds it and gives up its pending
    // deliveries, this one among them: waiting for the subscription while holding the delivery
    // is how the two deadlock. The success is recorded; the streak is that writer's to settle.
    const agency = await createTenant(t.app, { email: 'streak-since-claim@agency.example' })
    const subscription = await subscribe(t.app, agency, { url: 'http://127.0.0.1:9/hooks/streak', events: ['property.published'] })
    await writeEvents(t, agency, 1)
    await t.app.services.webhooks.fanOut(100)
    const [claimed] = (await t.app.services.webhooks.claimDue({ limit: 100, perSubscription: 100, busySubscriptions: [] })).filter(
      (delivery) => delivery.subscriptionId === subscription.id,
    )
    assert.ok(claimed && !claimed.subscriptionFailing)
    await t.db.execute(sql`update webhook_subscriptions set failing_since = now() where id = ${subscription.id}::int`)

    let recorded: number | undefined
    let recording: Promise<unknown> | undefined
    await whileHeld(subscription.id, async (prober) => {
      recording = t.app.services.webhooks
        .recordAttempts([{ claimed, outcome: outcome(true), retryAt: null, updatesHealth: true }])
        .then((count) => (recorded = count))
      await waitFor(async () => recorded !== undefined || (await someoneWaits(prober)), 30_000, 'the success recorded, or waiting')
      assert.equal(recorded, 1, 'recorded while the subscription is held, not waiting for it')
    })
    await recording
    const [delivery] = await queryRows<{ status: string }>(t.db, sql`select status from webhook_deliveries where id = ${claimed.id}::bigint`)
    assert.equal(delivery?.status, 'succeeded')
  })
})
