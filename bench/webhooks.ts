/**
 * Scenario (f): webhook deliveries. Agencies subscribe a fast local receiver (a child process
 * of its own, bench/receiver.ts) to `mls.new_listing`; the bench writes publications' events
 * to the outbox at a steady rate, each one the catalogue item of a real listing, exactly as the
 * internal check writes them when it publishes; two worker processes fan them out and deliver
 * them. The receiver counts deliveries per second and the latency from the event's time (the
 * publication) to its arrival, and its own CPU time, to show it is not what limits the rate.
 * Then, on the idle system, single publications one at a time: the latency a lone listing sees.
 *
 * Then the same with 1,000 filtered subscriptions (20 for each of the 50 agencies), each asking
 * for what an agency's client would: a city and a deal, with a type, a number of rooms or a
 * price range around one real listing's. Publications are written faster, so that the
 * deliveries offered per second are those of the unfiltered run: what differs is the fan-out,
 * which matches every event against 1,000 filters in memory (subscription-filters.ts).
 */
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import type { EventSubject, ListingFacts } from '../src/modules/catalogue/listing-facts.js'
import { compileFilter, type ListingFilter } from '../src/modules/catalogue/listing-filter.js'
import { startChild, type Child } from './children.js'
import { benchApiKey } from './data.js'

/** Agencies subscribed; each publication is delivered to every one of them. */
export const WEBHOOK_SUBSCRIBERS = 50
/** Publications per second: with 50 subscribers, 2,500 deliveries/s offered. */
export const PUBLICATIONS_PER_SECOND = 50
/** The filtered run: this many subscriptions, spread over the WEBHOOK_SUBSCRIBERS agencies (20 each, their most). */
export const FILTERED_SUBSCRIPTIONS = 1000
const WORKERS = 2
/** Events are written in small batches this often, so the rate is steady. */
const TICK_MS = 50
/** After the run, how long the queue may take to drain before what is left is reported. */
const DRAIN_TIMEOUT_MS = 15_000
/** Publications made one at a time on the idle system, each once the one before has arrived everywhere. */
const IDLE_PUBLICATIONS = 20
/** How long one of them may take to reach every subscriber before the bench gives up on it. */
const IDLE_TIMEOUT_MS = 10_000

export interface WebhookFigures {
  workers: number
  subscribers: number
  publications_per_second: number
  offered_deliveries_per_second: number
  /** Deliveries that arrived within the measured seconds, per second. */
  deliveries_per_second: number
  deliveries_measured: number
  latency_p50_ms: number
  latency_p99_ms: number
  latency_max_ms: number
  /** Deliveries still undelivered DRAIN_TIMEOUT_MS after publishing stopped. */
  undelivered_after_drain: number
  /** Answers the receiver saw with a webhook-id it had already accepted (retries after a timeout). */
  repeated_webhook_ids: number
  /**
   * Deliveries of the events written (publications × subscribers) that never reached the
   * receiver, once nothing is waiting any more; null while some still are (one in flight would
   * count as both received and waiting).
   */
  lost_deliveries: number | null
  /** The receiver's CPU time over the measured seconds, as a share of one core. */
  receiver_cpu_share: number
  /** Each worker process's CPU time over the measured seconds, as a share of one core. */
  worker_cpu_shares: number[]
  /**
   * The CPU time of the PostgreSQL backends serving the bench's database (the workers', the
   * publisher's, the service's) over the measured seconds, as a share of one core; null when the
   * server is not on this machine.
   */
  database_cpu_share: number | null
  /** Single publications on the idle system: latency to each subscriber. */
  idle: { publications: number; latency_p50_ms: number; latency_p99_ms: number; latency_max_ms: number }
  /** The same load through FILTERED_SUBSCRIPTIONS filtered subscriptions. */
  filtered: FilteredWebhookFigures
}

export interface FilteredWebhookFigures {
  subscriptions: number
  /** Of the subscriptions, the share an event matches on average, over the listings announced. */
  match_share: number
  publications_per_second: number
  offered_deliveries_per_second: number
  deliveries_per_second: number
  deliveries_measured: number
  latency_p50_ms: number
  latency_p99_ms: number
  latency_max_ms: number
  undelivered_after_drain: number
  repeated_webhook_ids: number
  lost_deliveries: number | null
  worker_cpu_shares: number[]
  database_cpu_share: number | null
  /** deliveries_per_second over the unfiltered run's: the target is at least 0.8. */
  ratio_to_unfiltered: number
}

/** A subscription the bench makes: which agency, to which receiver path, with what filter. */
interface BenchSubscription {
  tenant: number
  path: number
  filter: ListingFilter | null
}

/** A listing the bench announces: its catalogue item (the event's data) and its facts (the event's subject). */
interface Announcement {
  data: unknown
  facts: ListingFacts
}

export async function runWebhooks(
  service: Child,
  env: NodeJS.ProcessEnv,
  databaseUrl: string,
  load: { duration: number; warmup: number },
): Promise<WebhookFigures> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const announcements = await listingAnnouncements(service, client)
    const unfilteredSubscriptions = Array.from({ length: WEBHOOK_SUBSCRIBERS }, (_, i) => ({ tenant: i + 1, path: i + 1, filter: null }))
    const unfiltered = await runVariant(service, env, client, load, announcements, unfilteredSubscriptions, PUBLICATIONS_PER_SECOND, true)

    const filteredSubscriptions = benchFilters(announcements)
    const matches = announcements.map((announcement) => matchesOf(filteredSubscriptions, announcement))
    const meanMatches = matches.reduce((sum, n) => sum + n, 0) / matches.length
    // As many deliveries offered per second as the unfiltered run.
    const rate = Math.max(1, Math.round((PUBLICATIONS_PER_SECOND * WEBHOOK_SUBSCRIBERS) / meanMatches))
    const filtered = await runVariant(service, env, client, load, announcements, filteredSubscriptions, rate, false)
    return {
      ...unfiltered,
      filtered: {
        publications_per_second: filtered.publications_per_second,
        offered_deliveries_per_second: filtered.offered_deliveries_per_second,
        deliveries_per_second: filtered.deliveries_per_second,
        deliveries_measured: filtered.deliveries_measured,
        latency_p50_ms: filtered.latency_p50_ms,
        latency_p99_ms: filtered.latency_p99_ms,
        latency_max_ms: filtered.latency_max_ms,
        undelivered_after_drain: filtered.undelivered_after_drain,
        repeated_webhook_ids: filtered.repeated_webhook_ids,
        lost_deliveries: filtered.lost_deliveries,
        worker_cpu_shares: filtered.worker_cpu_shares,
        database_cpu_share: filtered.database_cpu_share,
        subscriptions: filteredSubscriptions.length,
        match_share: round(meanMatches / filteredSubscriptions.length, 4),
        ratio_to_unfiltered: round(filtered.deliveries_per_second / Math.max(unfiltered.deliveries_per_second, 1), 3),
      },
    }
  } finally {
    await client.end()
  }
}

type VariantFigures = Omit<WebhookFigures, 'filtered'>

/** One run: the subscriptions made afresh, then publications at `rate` a second, measured; then, if `idleToo`, single publications. */
async function runVariant(
  service: Child,
  env: NodeJS.ProcessEnv,
  client: pg.Client,
  load: { duration: number; warmup: number },
  announcements: readonly Announcement[],
  subscriptions: readonly BenchSubscription[],
  rate: number,
  idleToo: boolean,
): Promise<VariantFigures> {
  const receiver = await startReceiver(env)
  const workers: Child[] = []
  try {
    // An earlier run's subscriptions and events must not add to this one's work.
    await client.query('delete from webhook_subscriptions')
    await client.query('update events set dispatched_at = now() where dispatched_at is null')
    for (const subscription of subscriptions) await subscribe(service, subscription, receiver.urlFor(subscription.path))
    const expected = announcements.map((announcement) => matchesOf(subscriptions, announcement))
    const meanMatches = expected.reduce((sum, n) => sum + n, 0) / expected.length
    for (let i = 0; i < WORKERS; i++) workers.push(await startChild(`worker ${i + 1}`, 'bench/worker.ts', env))

    const filtered = subscriptions.some((subscription) => subscription.filter !== null)
    process.stderr.write(
      `(f) ${rate} publications/s to ${subscriptions.length} ${filtered ? 'filtered ' : ''}subscriptions (${meanMatches.toFixed(1)} deliveries each on average), ${WORKERS} workers: warm-up ${load.warmup} s, then ${load.duration} s… `,
    )
    let publishing = true
    const publisher = publish(client, announcements, rate, () => publishing)
    await sleep(load.warmup * 1000)
    await receiver.startMeasuring()
    const workersAtStart = workers.map((worker) => cpuSeconds(worker.pid))
    const databaseAtStart = await backendsCpuSeconds(client)
    await sleep(load.duration * 1000)
    const measured = await receiver.stopMeasuring()
    const seconds = measured.wall_ms / 1000
    const workerShares = workers.map((worker, i) => round((cpuSeconds(worker.pid) - workersAtStart[i]!) / seconds, 3))
    const databaseAtEnd = await backendsCpuSeconds(client)
    publishing = false
    const written = await publisher
    const perEvent = Math.ceil(meanMatches)
    const undelivered = await drain(client, perEvent)
    let idle: number[] = []
    if (idleToo) {
      process.stderr.write(`done; ${IDLE_PUBLICATIONS} single publications on the idle system… `)
      idle = await publishOneAtATime(client, announcements, expected, receiver)
    }
    process.stderr.write('done\n')
    // The last publication may have arrived everywhere, but not be recorded yet.
    const left = await drain(client, perEvent)
    const counts = await receiver.counts()
    // Publications go round the announcements in order, from the first.
    const sent = (count: number) => Array.from({ length: count }, (_, i) => expected[i % expected.length]!).reduce((sum, n) => sum + n, 0)

    const latencies = measured.latencies.sort((a, b) => a - b)
    const idleLatencies = idle.sort((a, b) => a - b)
    return {
      workers: WORKERS,
      subscribers: subscriptions.length,
      publications_per_second: rate,
      offered_deliveries_per_second: Math.round(rate * meanMatches),
      deliveries_per_second: Math.round((latencies.length / load.duration) * 10) / 10,
      deliveries_measured: latencies.length,
      latency_p50_ms: quantile(latencies, 0.5),
      latency_p99_ms: quantile(latencies, 0.99),
      latency_max_ms: latencies.at(-1) ?? 0,
      undelivered_after_drain: undelivered,
      repeated_webhook_ids: counts.repeats,
      lost_deliveries: left > 0 ? null : sent(written) + (idleToo ? sent(IDLE_PUBLICATIONS) : 0) - counts.distinct,
      receiver_cpu_share: round(measured.cpu_ms / measured.wall_ms, 3),
      worker_cpu_shares: workerShares,
      database_cpu_share: databaseAtStart.size === 0 ? null : round(cpuSpentBy(databaseAtStart, databaseAtEnd) / seconds, 3),
      idle: {
        publications: idleToo ? IDLE_PUBLICATIONS : 0,
        latency_p50_ms: quantile(idleLatencies, 0.5),
        latency_p99_ms: quantile(idleLatencies, 0.99),
        latency_max_ms: idleLatencies.at(-1) ?? 0,
      },
    }
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()))
    await receiver.stop()
  }
}

/** How many of the subscriptions an announcement of this listing reaches. */
function matchesOf(subscriptions: readonly BenchSubscription[], announcement: Announcement): number {
  return subscriptions.filter((subscription) => subscription.filter === null || compileFilter(subscription.filter)(announcement.facts)).length
}

/**
 * FILTERED_SUBSCRIPTIONS filters as agencies' clients set them: each around one of the listings
 * announced (so each matches something), in four kinds by turn: a city, a deal and a type; a
 * city, a deal and a number of rooms; a city, a deal and a price range of -20 % to +25 %; a city,
 * a type, a deal, rooms and a price ceiling.
 */
function benchFilters(announcements: readonly Announcement[]): BenchSubscription[] {
  return Array.from({ length: FILTERED_SUBSCRIPTIONS }, (_, i) => {
    // A stride prime to the pool's size, so neighbouring subscriptions ask about different listings.
    const facts = announcements[(i * 37) % announcements.length]!.facts
    const place = { ...(facts.city_id === null ? {} : { city_id: facts.city_id }), deal_type_id: facts.deal_type_id }
    const rooms = facts.rooms === null ? {} : { rooms: facts.rooms }
    const price = facts.price
    const kinds: ListingFilter[] = [
      { ...place, property_type_id: facts.property_type_id },
      { ...place, ...rooms },
      price === null ? place : { ...place, min_price: Math.floor(price * 0.8), max_price: Math.ceil(price * 1.25) },
      { ...place, property_type_id: facts.property_type_id, ...rooms, ...(price === null ? {} : { max_price: Math.ceil(price * 1.5) }) },
    ]
    return { tenant: 1 + (i % WEBHOOK_SUBSCRIBERS), path: i + 1, filter: kinds[i % kinds.length]! }
  })
}

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
const round = (value: number, digits: number) => Number(value.toFixed(digits))

/** A process's CPU time so far, user and system, from /proc (Linux); 0 where there is none. */
function cpuSeconds(pid: number | undefined): number {
  try {
    // Fields 14 and 15 (utime, stime), in clock ticks of 1/100 s; the name in field 2 may hold spaces, so count from its end.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}

/** The CPU time so far of each PostgreSQL backend connected to the bench's database, by pid; none if the server is elsewhere. */
async function backendsCpuSeconds(client: pg.Client): Promise<Map<number, number>> {
  const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()')
  const spent = new Map<number, number>()
  for (const { pid } of rows) {
    const seconds = cpuSeconds(pid)
    if (seconds > 0) spent.set(pid, seconds)
  }
  return spent
}

/** CPU time spent between two readings by the backends present at the end (one that connected meanwhile counts from 0). */
function cpuSpentBy(start: Map<number, number>, end: Map<number, number>): number {
  let total = 0
  for (const [pid, seconds] of end) total += seconds - (start.get(pid) ?? 0)
  return total
}

/** Writes `mls.new_listing` events at `rate` a second until told to stop, going round the announcements; how many it wrote. */
async function publish(client: pg.Client, announcements: readonly Announcement[], rate: number, going: () => boolean): Promise<number> {
  const started = Date.now()
  let written = 0
  while (going()) {
    const due = Math.floor(((Date.now() - started) / 1000) * rate)
    if (due > written) {
      await writeEvents(
        client,
        Array.from({ length: due - written }, (_, i) => announcements[(written + i) % announcements.length]!),
      )
      written = due
    }
    await sleep(TICK_MS)
  }
  return written
}

/** The events as the internal check writes a publication's: the catalogue item, and the listing's facts after (none before). */
async function writeEvents(client: pg.Client, announcements: readonly Announcement[]): Promise<void> {
  const data = announcements.map((announcement) => JSON.stringify(announcement.data))
  const subjects = announcements.map((announcement) => JSON.stringify({ before: null, after: announcement.facts } satisfies EventSubject))
  await client.query(
    `insert into events (type, tenant_id, data, subject)
     select 'mls.new_listing', 1, data::jsonb, subject::jsonb from unnest($1::text[], $2::text[]) as u(data, subject)`,
    [data, subjects],
  )
}

/**
 * Writes single events, each once the one before has reached every subscriber it matches, after
 * a pause of 100 to 300 ms (so that none lines up with a poll); the latencies of their deliveries.
 */
async function publishOneAtATime(
  client: pg.Client,
  announcements: readonly Announcement[],
  expected: readonly number[],
  receiver: Receiver,
): Promise<number[]> {
  await receiver.startMeasuring()
  for (let i = 0; i < IDLE_PUBLICATIONS; i++) {
    await sleep(100 + Math.random() * 200)
    const before = (await receiver.counts()).distinct
    await writeEvents(client, [announcements[i % announcements.length]!])
    const deadline = Date.now() + IDLE_TIMEOUT_MS
    while ((await receiver.counts()).distinct < before + expected[i % expected.length]! && Date.now() < deadline) await sleep(5)
  }
  return (await receiver.stopMeasuring()).latencies
}
/** Waits for the queue to empty; answers how many deliveries were still waiting at the end (an event not fanned out counts `perEvent`). */
async function drain(client: pg.Client, perEvent: number): Promise<number> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS
  for (;;) {
    const left = await waiting(client, perEvent)
    if (left === 0 || Date.now() > deadline) return left
    await sleep(200)
  }
}

/** Deliveries not made yet: those of events not fanned out, and those pending. */
async function waiting(client: pg.Client, perEvent: number): Promise<number> {
  const { rows } = await client.query<{ left: number }>(
    `select (select count(*) from events where dispatched_at is null)::int * ${perEvent}
            + (select count(*) from webhook_deliveries where status = 'pending')::int as left`,
  )
  return rows[0]!.left
}

async function subscribe(service: Child, subscription: BenchSubscription, url: string): Promise<void> {
  const response = await fetch(`${service.url}/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': benchApiKey(subscription.tenant) },
    body: JSON.stringify({ url, events: ['mls.new_listing'], description: 'bench receiver', ...(subscription.filter ? { filter: subscription.filter } : {}) }),
  })
  if (response.status !== 201) throw new Error(`POST /webhooks answered ${response.status}: ${await response.text()}`)
}

/** Real catalogue items, from the catalogue, to carry as the events' data, with their listings' facts from the database. */
async function listingAnnouncements(service: Child, client: pg.Client): Promise<Announcement[]> {
  const response = await fetch(`${service.url}/mls/properties?limit=100`)
  const { items } = (await response.json()) as { items: { id: number }[] }
  if (items.length === 0) throw new Error('The catalogue is empty: nothing to announce.')
  const { rows } = await client.query<ListingFacts>(
    `select id, tenant_id, property_type_id, deal_type_id, city_id, district_id, residential_complex_id,
            price::float8 as price, area::float8 as area, rooms, latitude::float8 as latitude, longitude::float8 as longitude
     from properties where id = any($1::int[])`,
    [items.map((item) => item.id)],
  )
  const facts = new Map(rows.map((row) => [row.id, row]))
  return items.map((item) => ({ data: item, facts: facts.get(item.id)! }))
}

/** The receiver child process (bench/receiver.ts) and its control paths. */
async function startReceiver(env: NodeJS.ProcessEnv) {
  const child = await startChild('receiver', 'bench/receiver.ts', env)
  const control = async <T>(what: string): Promise<T> => (await (await fetch(`${child.url}/control/${what}`)).json()) as T
  return {
    /** Each subscriber gets its own path, so one webhook-id reaching several is no repeat. */
    urlFor: (subscriber: number) => `${child.url}/hooks/${subscriber}`,
    startMeasuring: () => control<object>('start'),
    stopMeasuring: () => control<{ latencies: number[]; cpu_ms: number; wall_ms: number }>('stop'),
    counts: () => control<{ distinct: number; repeats: number }>('counts'),
    stop: () => child.stop(),
  }
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>
