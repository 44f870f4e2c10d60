import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { createMlsClient, type paths } from '@open-mls/client'
import { sql } from 'drizzle-orm'
import { Redis } from 'ioredis'
import { queryRows } from '../../src/db/client.js'
import { ListingStatus } from '../../src/modules/properties/listing-status.js'
import { deliveryLeaseMs } from '../../src/modules/webhooks/delivery-policy.js'
import { ADMIN_KEY } from '../helpers/app.js'
import { engine, freshDatabase, type FreshDatabase } from '../helpers/database.js'
import { startApiProcess, startWorkerProcess, type ApiProcess, type ServiceProcess } from '../helpers/service-process.js'
import { startReceiver, verifyDelivery, waitFor, type Receiver } from '../helpers/webhooks.js'

/**
 * The scale-out model of the README, proven with real processes: two API processes and two
 * workers on one PostgreSQL and one Redis. Mid-run one API process and one worker are killed
 * with SIGKILL (no shutdown of their own, as a crash or an OOM kill), traffic goes on, and
 * new processes replace them. Just before, the other worker is frozen (SIGSTOP) for a moment,
 * as a stalled process would be, so that the killed one certainly dies with deliveries in hand;
 * wherever the freeze lands, a transaction included, the other processes must go on.
 * Afterwards nothing acknowledged is lost, every event reached every subscription at least
 * once (repeats only as retries of one `webhook-id`), nothing is left claimed, and rate limits
 * were counted once across the API processes.
 */

const skip =
  engine === 'pglite'
    ? 'needs PostgreSQL (DATABASE_URL): processes share the database through a server, and PGlite lives inside one process'
    : !process.env.REDIS_URL
      ? 'needs REDIS_URL: rate limits are shared between API processes through Redis'
      : false

const CATALOGUE_LIMIT = 20
/** Submissions acknowledged in each phase: before the crash, while one of each is down, after the restart. */
const SUBMISSIONS_PER_PHASE = 24
/** Clients submitting at once. */
const CONCURRENT_CLIENTS = 4
const AGENCIES = 3
/** Deliveries the doomed worker holds, at least, when it is killed. */
const CLAIMED_AT_CRASH = 8
/**
 * After freezing a worker, how long before claims are surely another's: a claim the frozen
 * worker sent just before may still start on the server a moment later.
 */
const FROZEN_CLAIM_MARGIN_MS = 1000
/** WEBHOOK_TIMEOUT_MS of the processes; a claim holds a delivery for deliveryLeaseMs of it (7 s). */
const WEBHOOK_TIMEOUT_MS = 3000
/** Generous: the machine may be busy with other tests, and a killed worker's claims wait out their lease. */
const DRAIN_TIMEOUT_MS = 120_000
const PHASE_TIMEOUT_MS = 60_000

interface Agency {
  index: number
  tenantId: number
  apiKey: string
  /** Receives mls.new_listing, the MLS-wide announcement of every agency's publications. */
  newListings: Subscription
  /** Receives property.published and property.rejected, of this agency's own listings. */
  ownListings: Subscription
}

interface Subscription {
  id: number
  secret: string
  receiver: Receiver
}

interface Acknowledged {
  id: number
  agency: Agency
  /** Whether the submission passes the internal check. */
  passes: boolean
}

/** What the webhooks carry that the checks below read. */
interface DeliveredEvent {
  webhookId: string
  type: string
  propertyId: number
  body: string
  accepted: boolean
}

describe('two API processes and two workers, one of each killed mid-run', { skip }, () => {
  let database: FreshDatabase
  let dataDir: string
  const keyPrefix = `mls-test-scale-out-${randomBytes(6).toString('hex')}:`
  let env: Record<string, string>
  /** Every process started, dead or alive, so that `after` ends them all whatever happened. */
  const processes: ServiceProcess[] = []
  const receivers: Receiver[] = []
  /** The API processes traffic is spread over; the second is replaced after its crash. */
  let apis: ApiProcess[] = []
  let workers: ServiceProcess[] = []
  const agencies: Agency[] = []
  /** From this time on (ms since the epoch), receivers leave requests unanswered: the attempts under way stay under way. */
  let receiversHoldFrom = Number.POSITIVE_INFINITY

  const startApi = async (name: string) => {
    const api = await startApiProcess(name, { ...env, LOG_LEVEL: 'warn' })
    processes.push(api)
    return api
  }
  const startWorker = async (name: string) => {
    // Info, as the worker's "worker started" line is how it says it is ready (it has no port).
    const worker = await startWorkerProcess(name, { ...env, LOG_LEVEL: 'info' })
    processes.push(worker)
    return worker
  }

  before(async () => {
    database = await freshDatabase()
    dataDir = mkdtempSync(path.join(tmpdir(), 'mls-scale-out-'))
    env = {
      DATABASE_URL: database.url!,
      // Few connections each: four processes share a PostgreSQL that other tests use too.
      DATABASE_POOL_SIZE: '4',
      REDIS_URL: process.env.REDIS_URL!,
      // Counts of this run only: other runs on the same Redis have tenants and clients with the same ids.
      REDIS_KEY_PREFIX: keyPrefix,
      DATA_DIR: dataDir,
      SECRET_KEY: `scale-out-secret-${randomBytes(16).toString('hex')}`,
      ADMIN_API_KEY: ADMIN_KEY,
      ALLOW_PRIVATE_NETWORK: 'true',
      // Retries soon, and enough of them that a receiver's refusals or a slow machine never exhaust them.
      WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,1s,2s,2s,2s,2s,2s,2s',
      // A killed worker's claims are taken over once their lease (7 s) runs out.
      WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_CATALOGUE_PER_MINUTE: String(CATALOGUE_LIMIT),
    }
    ;[apis, workers] = await startTogether([startApi('api-1'), startApi('api-2')], [startWorker('worker-1'), startWorker('worker-2')])
    for (let index = 0; index < AGENCIES; index++) agencies.push(await registerAgency(index))
  })

  after(async () => {
    await Promise.all(processes.map((service) => service.stop(5000)))
    await Promise.all(receivers.map((receiver) => receiver.close()))
    await database?.drop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    await forgetRedisKeys(keyPrefix)
  })

  /**
   * Waits for every start to end before reporting a failure, so that `after` finds in
   * `processes` every process that did start.
   */
  async function startTogether(apiStarts: Promise<ApiProcess>[], workerStarts: Promise<ServiceProcess>[]): Promise<[ApiProcess[], ServiceProcess[]]> {
    await Promise.allSettled([...apiStarts, ...workerStarts])
    return [await Promise.all(apiStarts), await Promise.all(workerStarts)]
  }

  /** Registers through the first API process, approves (X-Admin-Key), subscribes receivers through the second. */
  async function registerAgency(index: number): Promise<Agency> {
    const [first, second] = apis as [ApiProcess, ApiProcess]
    const email = `scale-out-${index}-${randomBytes(4).toString('hex')}@agency.example`
    const publicApi = createMlsClient({ baseUrl: first.baseUrl })
    const registered = await publicApi.POST('/tenants/register', {
      body: { company_name: `Агентство №${index + 1}`, email, contact_name: 'Мария Иванова', phone: '8 (912) 345-67-89' },
    })
    assert.equal(registered.response.status, 201, JSON.stringify(registered.error))
    const code = registered.data!.request_code
    const approval = await fetch(`${first.baseUrl}/admin/registrations/${code}/approve`, { method: 'POST', headers: { 'X-Admin-Key': ADMIN_KEY } })
    assert.equal(approval.status, 200, await approval.text())
    const status = await publicApi.GET('/tenants/register/{request_code}', { params: { path: { request_code: code }, query: { email } } })
    assert.ok(status.data?.status === 'approved', 'the approved registration shows the key')
    const { tenant_id: tenantId, api_key: apiKey } = status.data
    assert.ok(apiKey, 'the approval key is still active, so the status carries it')

    const client = createMlsClient({ baseUrl: second.baseUrl, apiKey })
    const subscribe = async (events: ('mls.new_listing' | 'property.published' | 'property.rejected')[]): Promise<Subscription> => {
      const receiver = await startReceiver(refuseFirstAttemptOfSome(() => Date.now() >= receiversHoldFrom))
      receivers.push(receiver)
      const created = await client.POST('/webhooks', { body: { url: receiver.url, events } })
      assert.equal(created.response.status, 201, JSON.stringify(created.error))
      return { id: created.data!.id, secret: created.data!.secret, receiver }
    }
    return {
      index,
      tenantId,
      apiKey,
      newListings: await subscribe(['mls.new_listing']),
      ownListings: await subscribe(['property.published', 'property.rejected']),
    }
  }

  it('keeps every acknowledged listing and delivers every event at least once through the crash', async (t) => {
    const started = Date.now()
    const timings: string[] = []
    const mark = (what: string) => timings.push(`${what} at ${((Date.now() - started) / 1000).toFixed(1)} s`)
    // Clients submit an allowance per phase, so that each adds a bounded amount of work.
    const traffic = submitContinuously(() => apis, agencies, SUBMISSIONS_PER_PHASE)
    let heldByKilledWorker = 0
    try {
      // Before: all four processes run, listings are checked and announced.
      await waitFor(
        () => traffic.acknowledged.length >= SUBMISSIONS_PER_PHASE && agencies.some((agency) => agency.newListings.receiver.delivered().length > 0),
        PHASE_TIMEOUT_MS,
        'submissions acknowledged and webhooks delivered before the crash',
      )
      // So that the crash certainly catches a worker with deliveries in hand: the survivor is
      // frozen for a moment and receivers stop answering, and every claim made from then on is
      // the doomed worker's, its attempts under way when it dies.
      const [survivingApi, doomedApi] = apis as [ApiProcess, ApiProcess]
      const [survivingWorker, doomedWorker] = workers as [ServiceProcess, ServiceProcess]
      traffic.allow(traffic.acknowledged.length + 2 * SUBMISSIONS_PER_PHASE)
      await survivingWorker.pause()
      const frozenAt = await databaseNow()
      // Only claims made from then on are counted, so the doomed worker's earlier ones may end.
      receiversHoldFrom = Date.now() + FROZEN_CLAIM_MARGIN_MS
      await waitFor(
        async () => {
          // New listings keep coming, so new deliveries do too: a worker quick enough to have
          // claimed every earlier one within the margin still gets more to claim.
          if (traffic.settled()) traffic.allow(traffic.acknowledged.length + CONCURRENT_CLIENTS)
          return (await claimedSince(frozenAt)) >= CLAIMED_AT_CRASH
        },
        PHASE_TIMEOUT_MS,
        `the doomed worker to hold ${CLAIMED_AT_CRASH} deliveries`,
      )
      // The crash: one API process and one worker, mid-flight, with no chance to finish anything.
      await Promise.all([doomedApi.kill(), doomedWorker.kill()])
      heldByKilledWorker = await claimedSince(frozenAt)
      receiversHoldFrom = Number.POSITIVE_INFINITY
      survivingWorker.resume()
      mark(`killed after ${traffic.acknowledged.length} acknowledged, holding ${heldByKilledWorker} deliveries`)
      // While they are down: the dead process refuses connections; clients carry on with the other.
      traffic.allow(traffic.acknowledged.length + SUBMISSIONS_PER_PHASE)
      await waitFor(() => traffic.settled(), PHASE_TIMEOUT_MS, 'submissions acknowledged while one API process is down')
      mark('submitted while down')
      // The restart: new processes in their place, as a supervisor would start them.
      const [[api], [worker]] = await startTogether([startApi('api-2 (restarted)')], [startWorker('worker-2 (restarted)')])
      apis = [survivingApi, api!]
      workers = [survivingWorker, worker!]
      mark('restarted')
      traffic.allow(traffic.acknowledged.length + SUBMISSIONS_PER_PHASE)
      await waitFor(() => traffic.settled(), PHASE_TIMEOUT_MS, 'submissions acknowledged after the restart')
      mark('submitted after the restart')
    } finally {
      receiversHoldFrom = Number.POSITIVE_INFINITY
      for (const worker of workers) worker.resume()
      await traffic.stop()
    }
    const processesAlive = [...apis, ...workers].map((service) => `${service.name}: ${service.alive() ? 'up' : `down\n${service.recentOutput()}`}`)
    assert.ok(
      [...apis, ...workers].every((service) => service.alive()),
      processesAlive.join('\n'),
    )
    assert.deepEqual(traffic.unexpected, [], 'every request answered 201, or got no answer from a dead process')

    await waitFor(() => queueDrained(), DRAIN_TIMEOUT_MS, 'every listing checked and every delivery done')
    mark('drained')
    await assertNothingAcknowledgedLost(traffic.acknowledged)
    await assertNothingLeftClaimed()
    const delivered = await assertEveryEventDelivered()
    // A claim whose attempt was never recorded is one a worker held when it died: another
    // worker took it over once its lease ran out, and delivered it.
    const [takenOver] = await queryRows<{ n: number }>(
      database.handle.db,
      sql`select count(*)::int as n from webhook_deliveries d
          where d.attempts > (select count(*) from webhook_attempts a where a.delivery_id = d.id)`,
    )
    assert.ok(heldByKilledWorker > 0, 'the killed worker held deliveries')
    assert.ok(takenOver!.n >= heldByKilledWorker, `${takenOver!.n} claims taken over, of ${heldByKilledWorker} the killed worker held`)
    t.diagnostic(
      `${traffic.acknowledged.length} submissions acknowledged, ${traffic.unanswered} requests unanswered by the dead process; ` +
        `${delivered.requests} webhook requests for ${delivered.messages} messages; ${timings.join(', ')}`,
    )
  })

  it('counts rate limits once across the API processes', async () => {
    // The restarted process included: it shares the count it never saw begin.
    const statuses: number[] = []
    for (let request = 0; request < 2 * CATALOGUE_LIMIT; request++) {
      const api = apis[request % apis.length]!
      const response = await fetch(`${api.baseUrl}/mls/properties?limit=1`)
      await response.arrayBuffer()
      statuses.push(response.status)
    }
    assert.deepEqual(statuses, [...Array<number>(CATALOGUE_LIMIT).fill(200), ...Array<number>(CATALOGUE_LIMIT).fill(429)])
  })

  async function databaseNow(): Promise<Date> {
    const [row] = await queryRows<{ now: Date }>(database.handle.db, sql`select now() as now`)
    return new Date(row!.now)
  }

  /**
   * Deliveries claimed, and not yet recorded, FROZEN_CLAIM_MARGIN_MS after `since` or later. A claim
   * sets `next_attempt_at` to its time plus the lease. The margin keeps out a claim the frozen
   * worker had sent just before it froze.
   */
  async function claimedSince(since: Date): Promise<number> {
    const claimedAfter = new Date(since.getTime() + FROZEN_CLAIM_MARGIN_MS + deliveryLeaseMs(WEBHOOK_TIMEOUT_MS))
    const [row] = await queryRows<{ n: number }>(
      database.handle.db,
      sql`select count(*)::int as n from webhook_deliveries
          where status = 'pending' and lease_token is not null and next_attempt_at > ${claimedAfter.toISOString()}::timestamptz`,
    )
    return row!.n
  }

  /** Every listing checked, every event fanned out, no delivery waiting for an attempt or a retry. */
  async function queueDrained(): Promise<boolean> {
    const [row] = await queryRows<{ unchecked: number; undispatched: number; pending: number }>(
      database.handle.db,
      sql`select (select count(*) from properties where review_requested_at is not null)::int as unchecked,
                 (select count(*) from events where dispatched_at is null)::int as undispatched,
                 (select count(*) from webhook_deliveries where status = 'pending')::int as pending`,
    )
    return row!.unchecked === 0 && row!.undispatched === 0 && row!.pending === 0
  }

  /** Every 201 is there, decided as the check decides, and no listing exists twice. */
  async function assertNothingAcknowledgedLost(acknowledged: Acknowledged[]): Promise<void> {
    const rows = await queryRows<{ id: number; tenant_id: number; status_id: number }>(database.handle.db, sql`select id, tenant_id, status_id from properties`)
    const stored = new Map(rows.map((row) => [row.id, row]))
    for (const { id, agency, passes } of acknowledged) {
      const row = stored.get(id)
      assert.ok(row, `listing ${id} was acknowledged with 201 but is not in the database`)
      assert.equal(row.tenant_id, agency.tenantId, `listing ${id}`)
      assert.equal(row.status_id, passes ? ListingStatus.Published : ListingStatus.Rejected, `listing ${id}`)
    }
    // Each submission has its own address: a request retried after a crash that was stored twice
    // would show here (its Idempotency-Key should have replayed the first answer instead).
    const [twice] = await queryRows<{ n: number }>(
      database.handle.db,
      sql`select count(*)::int as n from (select address from properties group by address having count(*) > 1) repeated`,
    )
    assert.equal(twice!.n, 0, 'a submission was stored twice')
  }

  async function assertNothingLeftClaimed(): Promise<void> {
    const rows = await queryRows<{ status: string; claimed: boolean; n: number }>(
      database.handle.db,
      sql`select status, lease_token is not null as claimed, count(*)::int as n from webhook_deliveries group by 1, 2 order by 1, 2`,
    )
    assert.deepEqual(
      rows.map((row) => `${row.status}${row.claimed ? ' (claimed)' : ''}`),
      ['succeeded'],
      `deliveries: ${JSON.stringify(rows)}`,
    )
  }

  /**
   * Each published listing's mls.new_listing reached every agency's receiver, and its
   * property.published its own agency's; each rejected listing's property.rejected its agency's.
   * Every request's signature verifies; an event reached a receiver under one webhook-id only,
   * with the same bytes on every attempt; no receiver got an event for a listing that is not so.
   */
  async function assertEveryEventDelivered(): Promise<{ requests: number; messages: number }> {
    const rows = await queryRows<{ id: number; tenant_id: number; status_id: number }>(database.handle.db, sql`select id, tenant_id, status_id from properties`)
    const published = rows.filter((row) => row.status_id === ListingStatus.Published)
    const rejected = rows.filter((row) => row.status_id === ListingStatus.Rejected)
    assert.equal(published.length + rejected.length, rows.length, 'every listing was decided')
    let requests = 0
    let messages = 0
    for (const agency of agencies) {
      const newListings = receivedEvents(agency.newListings)
      const ownListings = receivedEvents(agency.ownListings)
      requests += agency.newListings.receiver.requests.length + agency.ownListings.receiver.requests.length
      messages += newListings.size + ownListings.size
      assertSameKeys(
        newListings,
        published.map((row) => `mls.new_listing ${row.id}`),
        `agency ${agency.index}: mls.new_listing`,
      )
      assertSameKeys(
        ownListings,
        [
          ...published.filter((row) => row.tenant_id === agency.tenantId).map((row) => `property.published ${row.id}`),
          ...rejected.filter((row) => row.tenant_id === agency.tenantId).map((row) => `property.rejected ${row.id}`),
        ],
        `agency ${agency.index}: property.*`,
      )
      // The database agrees: one delivery per message the receiver got, all succeeded.
      const [deliveries] = await queryRows<{ n: number }>(
        database.handle.db,
        sql`select count(*)::int as n from webhook_deliveries
            where subscription_id in (${agency.newListings.id}::int, ${agency.ownListings.id}::int) and status = 'succeeded'`,
      )
      assert.equal(deliveries!.n, newListings.size + ownListings.size, `agency ${agency.index}: deliveries`)
    }
    return { requests, messages }
  }
})

/**
 * The events a subscription's receiver got, by `<type> <property id>`: each verified with the
 * subscription's secret, accepted at least once, and always under one webhook-id with one body.
 */
function receivedEvents(subscription: Subscription): Map<string, DeliveredEvent> {
  const events = new Map<string, DeliveredEvent>()
  for (const request of subscription.receiver.requests) {
    const message = verifyDelivery(subscription.secret, request)
    const propertyId = Number(message.type === 'mls.new_listing' ? message.data.id : message.data.property_id)
    const key = `${message.type} ${propertyId}`
    const webhookId = String(request.headers['webhook-id'])
    const accepted = request.status >= 200 && request.status < 300
    const earlier = events.get(key)
    if (earlier) {
      assert.equal(webhookId, earlier.webhookId, `${key} came under two webhook-ids: a second message, not a retry`)
      assert.equal(request.body, earlier.body, `${key}: a retry's body differs`)
      earlier.accepted ||= accepted
    } else {
      events.set(key, { webhookId, type: message.type, propertyId, body: request.body, accepted })
    }
  }
  for (const [key, event] of events) assert.ok(event.accepted, `${key} (${event.webhookId}) was never accepted`)
  return events
}

function assertSameKeys(events: Map<string, DeliveredEvent>, expected: string[], what: string): void {
  const missing = expected.filter((key) => !events.has(key))
  const unexpected = [...events.keys()].filter((key) => !expected.includes(key))
  assert.deepEqual({ missing, unexpected }, { missing: [], unexpected: [] }, what)
}

/**
 * A receiver that refuses (503) the first attempt of one message in four, so retries happen
 * all through the run, and accepts everything else; while `holding()`, it answers nothing.
 */
function refuseFirstAttemptOfSome(holding: () => boolean) {
  const seen = new Set<string>()
  return ({ headers }: { headers: Record<string, string | string[] | undefined> }): 'hang' | { status: number } => {
    if (holding()) return 'hang'
    const webhookId = String(headers['webhook-id'])
    const first = !seen.has(webhookId)
    seen.add(webhookId)
    const refused = first && Number(webhookId.replace('msg_', '')) % 4 === 0
    return { status: refused ? 503 : 202 }
  }
}

interface Traffic {
  /** Submissions answered 201, in order. */
  acknowledged: Acknowledged[]
  /** Requests that got no answer: the process was dead or died while holding them. */
  unanswered: number
  /** Answers other than 201 (and the 409 of a key still in process), which should not happen. */
  unexpected: string[]
  /** Lets clients go on until this many submissions are acknowledged in all. */
  allow(acknowledged: number): void
  /** Whether the allowance is acknowledged and no submission is under way. */
  settled(): boolean
  stop(): Promise<void>
}

/**
 * Clients submitting listings one after another until `allowance` submissions are acknowledged
 * (raised with `allow`) or they are stopped, spread over the API processes
 * `apis()` names at each request; two in three pass the internal check, the others do not.
 * A request that gets no answer is sent again to the next process with the same
 * Idempotency-Key, as a careful client does; a 201 (first answer or replay) is acknowledged.
 */
function submitContinuously(apis: () => readonly ApiProcess[], agencies: readonly Agency[], allowance: number): Traffic {
  let stopped = false
  let next = 0
  let underWay = 0
  const traffic: Traffic = {
    acknowledged: [],
    unanswered: 0,
    unexpected: [],
    allow: (acknowledged) => {
      allowance = acknowledged
    },
    settled: () => traffic.acknowledged.length >= allowance && underWay === 0,
    stop: async () => {},
  }

  const submitOnce = async (number: number, agency: Agency, passes: boolean): Promise<void> => {
    const body = submission(passes)
    const idempotencyKey = randomUUID()
    for (let attempt = 0; attempt < 20 && !stopped; attempt++) {
      const targets = apis()
      const api = targets[(number + attempt) % targets.length]!
      const answer = await submit(api, agency, body, idempotencyKey)
      if (answer === 'no answer') {
        traffic.unanswered++
        continue
      }
      if (answer.status === 201 && answer.id !== undefined) {
        traffic.acknowledged.push({ id: answer.id, agency, passes })
        return
      }
      // The same key still held by the request the dead process had: it is released when its
      // transaction is rolled back, then the retry goes through.
      if (answer.status === 409) {
        await sleep(100)
        continue
      }
      traffic.unexpected.push(`${api.name}: ${answer.status} ${answer.error}`)
      return
    }
    if (!stopped) traffic.unexpected.push(`a submission found no API process to take it in 20 attempts`)
  }

  const client = async () => {
    while (!stopped) {
      if (traffic.acknowledged.length >= allowance) {
        await sleep(20)
        continue
      }
      const number = next++
      underWay++
      await submitOnce(number, agencies[number % agencies.length]!, number % 3 !== 2).finally(() => underWay--)
    }
  }
  const clients = Array.from({ length: CONCURRENT_CLIENTS }, () => client())
  traffic.stop = async () => {
    stopped = true
    await Promise.all(clients)
  }
  return traffic
}

type Submission = NonNullable<paths['/properties']['post']['requestBody']>['content']['application/json']

/** POST /properties through `api`; 'no answer' when the connection failed (the process is dead or died meanwhile). */
async function submit(
  api: ApiProcess,
  agency: Agency,
  body: Submission,
  idempotencyKey: string,
): Promise<{ status: number; id: number | undefined; error: string } | 'no answer'> {
  const client = createMlsClient({ baseUrl: api.baseUrl, apiKey: agency.apiKey })
  try {
    const { data, error, response } = await client.POST('/properties', { params: { header: { 'idempotency-key': idempotencyKey } }, body })
    return { status: response.status, id: data?.id, error: JSON.stringify(error) }
  } catch {
    return 'no answer'
  }
}

/** A submission with an address of its own; one that fails the check has a floor above the building or a phone in its text. */
function submission(passes: boolean): Submission {
  const body: Submission = {
    property_type: 'Квартира',
    deal_type: 'Продажа',
    price: 8_500_000,
    description: 'Светлая двухкомнатная квартира с видом на парк.',
    owner: { name: 'Иван Петров', phone: '8 (912) 345-67-89' },
    location: { city_id: 1, district_id: 1, address: `Москва, ул. Тверская, д. ${randomBytes(4).toString('hex')}` },
    attributes: { area: '54.5', rooms: '2', floor: '5', total_floors: '9' },
  }
  if (passes) return body
  return randomBytes(1)[0]! % 2 === 0
    ? { ...body, attributes: { ...body.attributes, floor: '12' } }
    : { ...body, description: 'Звоните: 8 (912) 345-67-89, без посредников' }
}

/** Deletes this run's rate-limit counts from Redis (they would expire on their own within the hour). */
async function forgetRedisKeys(prefix: string): Promise<void> {
  const redis = new Redis(process.env.REDIS_URL!, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await redis.connect()
    let cursor = '0'
    do {
      const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
      if (keys.length > 0) await redis.del(...keys)
      cursor = nextCursor
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
}
