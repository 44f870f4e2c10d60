import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { describe, it, type TestContext } from 'node:test'
import { sql } from 'drizzle-orm'
import pg from 'pg'
import pino, { type Logger } from 'pino'
import { CONNECT_TIMEOUT_MS, queryRows } from '../../src/db/client.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { ListingStatus } from '../../src/modules/properties/listing-status.js'
import { SERVICE_UNAVAILABLE } from '../../src/plugins/error-handler.js'
import { engine, serverUrl } from '../helpers/database.js'
import { createTenant, propertyBody, type Tenant } from '../helpers/factories.js'
import { startLiveService, type LiveService, type LiveServiceOptions } from '../helpers/live-service.js'
import { startLoad, type Load, type Outcome, type RequestKind } from '../helpers/load.js'
import { createPrivateCluster, postgresBinaries } from '../helpers/private-cluster.js'
import { startReceiver, subscribe, waitFor, type Receiver } from '../helpers/webhooks.js'

const SERVICE_ENV = {
  ALLOW_PRIVATE_NETWORK: 'true',
  // An attempt whose outcome could not be recorded (the database went away meanwhile) is made
  // again when its lease ends, 2 × timeout + 1 s: 5 s here rather than 21.
  WEBHOOK_TIMEOUT_MS: '2000',
}
/** Catalogue reads of the load: searches, which always ask the database (catalogue versions). */
const READ_PATHS = ['/mls/properties?limit=20', '/mls/properties?city_id=1&limit=5', '/mls/properties?sort=price_asc&limit=10']
const LOAD = { readers: 3, submitters: 2 }

/**
 * The bound: the service serves again by itself within 5 s of its database's return,
 * counted from when a new connection of the test's first succeeds. The service needs well under
 * a second (6 to 203 ms measured, on an idle and on a busy machine): the rest of the 5 s is the
 * tolerance for a loaded machine, so the bound is asserted as the issue states it.
 */
const RECOVERY_LIMIT_MS = 5000
/**
 * The bound on a 503: no request waits longer than the connect timeout (2 s) for a
 * database that is down, plus 500 ms for a loaded machine: the load, the service and its
 * worker share this process, and on 2 busy cores a request can wait that long for its turn.
 */
const UNAVAILABLE_LATENCY_LIMIT_MS = CONNECT_TIMEOUT_MS + 500
/** How long the private cluster stays down, at least: a length of outage, not a wait for something. */
const OUTAGE_MS = 12_000
/** Limits of waits for conditions: generous, as they only keep a broken run from hanging. */
const PATIENCE_MS = 120_000

const OUTAGE_LINE = /^the database is unreachable/
const RECOVERY_LINE = /^the database is reachable again/
const PINO_ERROR = 50
const PINO_INFO = 30
const PINO_WARN = 40

const binaries = postgresBinaries()

describe(
  'database outages',
  { skip: engine === 'pglite' ? 'needs PostgreSQL (set DATABASE_URL): PGlite runs inside the process and has no connection to lose' : false },
  () => {
    it(
      'stays up, answering 2xx or 503, while every backend of the service is terminated under load, and loses nothing',
      { timeout: 10 * 60_000 },
      async (t) => {
        const ROUNDS = 4
        const { log, lines } = capturedLog()
        const service = await startLiveService(SERVICE_ENV, { log })
        const receiver = await startReceiver()
        let load: Load | undefined
        try {
          const { tenant, subscriptionId } = await subscribedTenant(service, receiver)
          load = startLoad({ baseUrl: service.baseUrl, apiKey: tenant.apiKey, readPaths: READ_PATHS, ...LOAD })
          const running = load
          const blips: { at: number; terminated: number }[] = []
          for (let round = 0; round < ROUNDS; round++) {
            // Each blip finds the service in full swing: taking submissions again, its last outage over.
            const since = blips.at(-1)?.at ?? 0
            await waitFor(() => successesSince(running.outcomes, 'submission', since).length >= 10, PATIENCE_MS, 'submissions to succeed again')
            await waitFor(() => !service.database.handle.availability.isDown, PATIENCE_MS, 'the outage to be over')
            const at = performance.now()
            blips.push({ at, terminated: await terminateBackends(service.database.name!) })
          }
          const last = blips.at(-1)!.at
          await waitFor(
            () => successesSince(running.outcomes, 'read', last).length > 0 && successesSince(running.outcomes, 'submission', last).length > 0,
            PATIENCE_MS,
            'the service to answer again',
          )
          await load.stop()

          assert.ok(
            blips.every((blip) => blip.terminated > 0),
            `every round terminated backends: ${JSON.stringify(blips)}`,
          )
          assertOnly2xxOr503(load.outcomes)
          assert.equal((await fetch(`${service.baseUrl}/healthz`)).status, 200)

          const unavailable = load.outcomes.filter((outcome) => outcome.status === 503).length
          t.diagnostic(
            `backends terminated ${ROUNDS} times (${blips.map((blip) => blip.terminated).join(', ')} each): ${describeShare(unavailable, load.outcomes.length)}`,
          )
          for (const [index, blip] of blips.entries()) {
            const next = blips[index + 1]?.at ?? Infinity
            const during = load.outcomes.filter((outcome) => outcome.endedAt >= blip.at && outcome.endedAt < next)
            const back = Math.max(...(['read', 'submission'] as const).map((kind) => firstSuccessSince(during, kind, blip.at) - blip.at))
            t.diagnostic(`blip ${index + 1}: both reads and submissions succeeded again ${back.toFixed(0)} ms after the termination`)
          }

          await assertNothingLost(service, tenant, subscriptionId, receiver, load.outcomes)
          await assertServesAndPublishes(t, service, tenant)
          await waitFor(() => !service.database.handle.availability.isDown, PATIENCE_MS, 'the recovery to be logged')
          assertLoggedOncePerOutage(lines, ROUNDS)
        } finally {
          await load?.stop()
          await receiver.close()
          await service.close()
        }
      },
    )

    it(
      'answers 503 quickly while its own PostgreSQL cluster is down, and serves again within 5 s of its return, losing nothing',
      { skip: 'missing' in binaries ? `no private PostgreSQL cluster can be made here: ${binaries.missing}` : false, timeout: 10 * 60_000 },
      async (t) => {
        if (!('bin' in binaries)) return
        const cluster = await createPrivateCluster(binaries.bin)
        let service: LiveService | undefined
        let receiver: Receiver | undefined
        let load: Load | undefined
        try {
          const { log, lines } = capturedLog()
          service = await startLiveService(SERVICE_ENV, { log, serverUrl: cluster.url } satisfies LiveServiceOptions)
          receiver = await startReceiver()
          const { tenant, subscriptionId } = await subscribedTenant(service, receiver)
          load = startLoad({ baseUrl: service.baseUrl, apiKey: tenant.apiKey, readPaths: READ_PATHS, ...LOAD })
          const { outcomes } = load
          await waitFor(() => successesSince(outcomes, 'submission', 0).length >= 20, PATIENCE_MS, 'submissions before the outage')

          await cluster.crash()
          const downAt = performance.now()
          // Enough answers to requests sent while the server is down to judge them, and long
          // enough for the worker's pauses between failed jobs to have grown to their longest.
          await waitFor(
            () => performance.now() - downAt >= OUTAGE_MS && outcomes.filter((outcome) => outcome.startedAt >= downAt).length >= 50,
            PATIENCE_MS,
            'answers during the outage',
          )
          const health = await timedGet(service, '/healthz')
          const readiness = await timedGet(service, '/readyz')
          // As an orchestrator probes, again and again: the outage is still logged once.
          for (const _probe of [1, 2]) assert.equal((await timedGet(service, '/readyz')).status, 503)

          const restartAt = performance.now()
          const accepting = whenAccepting(cluster.url)
          await cluster.start()
          const acceptingAt = await accepting
          await waitFor(
            () => successesSince(outcomes, 'read', downAt).length > 0 && successesSince(outcomes, 'submission', downAt).length > 0,
            PATIENCE_MS,
            'the service to answer again',
          )
          await load.stop()

          assertOnly2xxOr503(outcomes)
          const whileDown = outcomes.filter((outcome) => outcome.startedAt >= downAt && outcome.endedAt <= restartAt)
          assert.ok(whileDown.length > 0)
          assert.deepEqual(
            whileDown.filter((outcome) => outcome.status !== 503),
            [],
            'every request sent while the server was down answered 503',
          )
          const slowest = Math.max(...whileDown.map((outcome) => outcome.endedAt - outcome.startedAt))
          assert.ok(slowest <= UNAVAILABLE_LATENCY_LIMIT_MS, `the slowest 503 took ${slowest.toFixed(0)} ms`)
          assert.equal(health.status, 200, '/healthz while the database is down')
          assert.equal(readiness.status, 503, '/readyz while the database is down')
          assert.ok(readiness.ms <= UNAVAILABLE_LATENCY_LIMIT_MS, `/readyz took ${readiness.ms.toFixed(0)} ms`)

          const recoveredAt = Math.max(firstSuccessSince(outcomes, 'read', downAt), firstSuccessSince(outcomes, 'submission', downAt))
          const recoveryMs = recoveredAt - acceptingAt.at
          const outage = outcomes.filter((outcome) => outcome.endedAt >= downAt && outcome.endedAt <= recoveredAt)
          t.diagnostic(
            `server down ${(acceptingAt.at - downAt).toFixed(0)} ms; answers from the crash until reads and submissions succeeded again: ${describeShare(outage.filter((o) => o.status === 503).length, outage.length)}`,
          )
          t.diagnostic(
            `slowest 503 while down: ${slowest.toFixed(0)} ms; /readyz ${readiness.status} in ${readiness.ms.toFixed(0)} ms; /healthz ${health.status}`,
          )
          t.diagnostic(`recovery: reads and submissions succeeded again ${recoveryMs.toFixed(0)} ms after the server accepted connections`)
          assert.ok(recoveryMs <= RECOVERY_LIMIT_MS, `the service served again ${recoveryMs.toFixed(0)} ms after its database came back`)

          await assertNothingLost(service, tenant, subscriptionId, receiver, outcomes)
          const [resumed] = await queryRows<{ ms: number }>(
            service.db,
            sql`select extract(epoch from min(published_at))::float8 * 1000 - ${acceptingAt.wallClock}::float8 as ms
              from properties where published_at >= to_timestamp(${acceptingAt.wallClock}::float8 / 1000)`,
          )
          t.diagnostic(`the worker published again ${resumed!.ms.toFixed(0)} ms after the server accepted connections`)
          // The worker serves again within the same bound: its pauses end when the outage does.
          assert.ok(resumed!.ms <= RECOVERY_LIMIT_MS, `the worker published again ${resumed!.ms.toFixed(0)} ms after its database came back`)
          await assertServesAndPublishes(t, service, tenant)
          await waitFor(() => !service!.database.handle.availability.isDown, PATIENCE_MS, 'the recovery to be logged')
          assertLoggedOncePerOutage(lines, 1)
        } finally {
          await load?.stop()
          await receiver?.close()
          // Dropping its database fails if the test ended with the cluster down: it goes with the cluster.
          await service?.close().catch(() => undefined)
          await cluster.destroy()
        }
      },
    )
  },
)

/** A logger that keeps its lines, to count the outage's. */
function capturedLog(): { log: Logger; lines: { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = []
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) })
  return { log, lines }
}

/** An agency whose subscription to `mls.new_listing` reaches `receiver`. */
async function subscribedTenant(service: LiveService, receiver: Receiver): Promise<{ tenant: Tenant; subscriptionId: number }> {
  const tenant = await createTenant(service.app)
  const subscription = await subscribe(service.app, tenant, { url: receiver.url, events: ['mls.new_listing'] })
  return { tenant, subscriptionId: subscription.id }
}

/** What an operator's `pg_terminate_backend` does to the service: every one of its connections to `database` cut. */
async function terminateBackends(database: string): Promise<number> {
  const client = new pg.Client({ connectionString: serverUrl, application_name: 'open-mls-outage-test' })
  await client.connect()
  try {
    const { rows } = await client.query<{ terminated: number }>(
      `select count(*) filter (where pg_terminate_backend(pid))::int as terminated
       from pg_stat_activity where application_name = 'open-mls' and datname = $1`,
      [database],
    )
    return rows[0]!.terminated
  } finally {
    await client.end()
  }
}

/** When a new connection to `url` first succeeds, polling from now on: on both clocks. */
async function whenAccepting(url: string): Promise<{ at: number; wallClock: number }> {
  for (;;) {
    const client = new pg.Client({ connectionString: url, application_name: 'open-mls-outage-test', connectionTimeoutMillis: 1000 })
    client.on('error', () => undefined)
    try {
      await client.connect()
      const at = { at: performance.now(), wallClock: Date.now() }
      await client.end()
      return at
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
}

async function timedGet(service: LiveService, path: string): Promise<{ status: number; ms: number }> {
  const startedAt = performance.now()
  const response = await fetch(`${service.baseUrl}${path}`)
  await response.arrayBuffer()
  return { status: response.status, ms: performance.now() - startedAt }
}

/** Successes of requests sent after `since` (an answer to one sent before may be read late). */
function successesSince(outcomes: readonly Outcome[], kind: RequestKind, since: number): Outcome[] {
  return outcomes.filter((outcome) => outcome.kind === kind && outcome.startedAt >= since && isSuccess(outcome))
}

/** When the first success of `kind` sent after `since` ended; Infinity if none did. */
function firstSuccessSince(outcomes: readonly Outcome[], kind: RequestKind, since: number): number {
  return Math.min(...successesSince(outcomes, kind, since).map((outcome) => outcome.endedAt))
}

function isSuccess(outcome: Outcome): boolean {
  return outcome.status !== undefined && outcome.status >= 200 && outcome.status < 300
}

function describeShare(unavailable: number, all: number): string {
  return `${unavailable} of ${all} answers were 503 (${((100 * unavailable) / Math.max(all, 1)).toFixed(1)} %), the rest 2xx`
}

/** No reset, no timeout, no 500: a success, or the one 503 of an unreachable database. */
function assertOnly2xxOr503(outcomes: readonly Outcome[]): void {
  assert.deepEqual(
    outcomes.filter((outcome) => outcome.status === undefined),
    [],
    'every request was answered',
  )
  assert.deepEqual(
    outcomes.filter((outcome) => !isSuccess(outcome) && outcome.status !== 503),
    [],
    'every answer was 2xx or 503',
  )
  assert.deepEqual(
    outcomes.filter((outcome) => outcome.status === 503 && (outcome.detail !== SERVICE_UNAVAILABLE || outcome.retryAfter !== '5')),
    [],
    `every 503 said "${SERVICE_UNAVAILABLE}" with Retry-After: 5`,
  )
}

/**
 * The service works as before: ready, taking a submission, and its worker running the internal
 * check on it (its job loops survived the outage).
 */
async function assertServesAndPublishes(t: TestContext, service: LiveService, tenant: Tenant): Promise<void> {
  assert.equal((await fetch(`${service.baseUrl}/readyz`)).status, 200)
  const submitted = await fetch(`${service.baseUrl}/properties`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': tenant.apiKey },
    body: JSON.stringify(propertyBody()),
  })
  assert.equal(submitted.status, 201)
  const { id } = (await submitted.json()) as Property
  const submittedAt = performance.now()
  await waitFor(
    async () => {
      const response = await fetch(`${service.baseUrl}/properties/${id}`, { headers: { 'x-api-key': tenant.apiKey } })
      return ((await response.json()) as Property).status_id === ListingStatus.Published
    },
    PATIENCE_MS,
    'the worker to publish a submission made after the outage',
  )
  t.diagnostic(`a submission after the outage was published by the worker ${(performance.now() - submittedAt).toFixed(0)} ms later`)
}

/**
 * Every acknowledged submission is there, whole (one transaction: with its owner and place),
 * and went on as any other: checked, published, announced once, and delivered to the receiver.
 */
async function assertNothingLost(
  service: LiveService,
  tenant: Tenant,
  subscriptionId: number,
  receiver: Receiver,
  outcomes: readonly Outcome[],
): Promise<void> {
  const acknowledged = outcomes.flatMap((outcome) => (outcome.createdId === undefined ? [] : [outcome.createdId]))
  const listings = () =>
    queryRows<{ id: number; status_id: number; owner_id: number | null; city_id: number | null }>(
      service.db,
      sql`select id, status_id, owner_id, city_id from properties where tenant_id = ${tenant.tenantId}`,
    )
  const stored = new Set((await listings()).map((row) => row.id))
  assert.deepEqual(
    acknowledged.filter((id) => !stored.has(id)),
    [],
    'every 201 is in the database',
  )
  assert.deepEqual(
    (await listings()).filter((row) => row.owner_id === null || row.city_id === null),
    [],
    'no submission is half-stored',
  )

  await waitFor(
    async () => (await listings()).every((row) => row.status_id === ListingStatus.Published),
    PATIENCE_MS,
    'every submission to be checked and published',
  )
  const published = (await listings()).map((row) => row.id).sort((a, b) => a - b)
  const announced = await queryRows<{ id: number }>(service.db, sql`select (data->>'id')::int as id from events where type = 'mls.new_listing' order by 1`)
  assert.deepEqual(
    announced.map((row) => row.id),
    published,
    'each publication announced once',
  )

  await waitFor(
    async () => {
      const [counts] = await queryRows<{ succeeded: number; all: number }>(
        service.db,
        sql`select count(*) filter (where status = 'succeeded')::int as succeeded, count(*)::int as all
            from webhook_deliveries where subscription_id = ${subscriptionId}`,
      )
      return counts!.all === published.length && counts!.succeeded === counts!.all
    },
    PATIENCE_MS,
    'every delivery to succeed',
  )
  // At least once: every listing reached the receiver; a repeat only as a retry with the same webhook-id.
  const idsByListing = new Map<number, Set<string>>()
  for (const request of receiver.delivered()) {
    const listing = (JSON.parse(request.body) as { data: { id: number } }).data.id
    idsByListing.set(listing, (idsByListing.get(listing) ?? new Set()).add(String(request.headers['webhook-id'])))
  }
  assert.deepEqual(
    [...idsByListing.keys()].sort((a, b) => a - b),
    published,
    'every published listing was delivered',
  )
  assert.ok(
    [...idsByListing.values()].every((ids) => ids.size === 1),
    'repeats carry the same webhook-id',
  )
}

/** One error line when an outage starts and one info line when it ends, whatever the number of failed requests; no other error. */
function assertLoggedOncePerOutage(lines: readonly { level: number; msg: string }[], outages: number): void {
  const errors = lines.filter((line) => line.level >= PINO_ERROR)
  assert.deepEqual(
    errors.filter((line) => !OUTAGE_LINE.test(line.msg)),
    [],
    'no error logged but the outage',
  )
  assert.equal(errors.length, outages, 'one error line per outage')
  assert.deepEqual(
    lines.filter((line) => line.level === PINO_WARN && /readiness/.test(line.msg)),
    [],
    'no warning per readiness probe',
  )
  assert.equal(lines.filter((line) => line.level === PINO_INFO && RECOVERY_LINE.test(line.msg)).length, outages, 'one recovery line per outage')
}
