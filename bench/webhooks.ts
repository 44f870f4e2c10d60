/**
 * Scenario (f): webhook deliveries. Agencies subscribe a fast local receiver (a child process
 * of its own, bench/receiver.ts) to `mls.new_listing`; the bench writes publications' events
 * to the outbox at a steady rate, each one the catalogue item of a real listing, exactly as the
 * internal check writes them when it publishes; two worker processes fan them out and deliver
 * them. The receiver counts deliveries per second and the latency from the event's time (the
 * publication) to its arrival, and its own CPU time, to show it is not what limits the rate.
 * Then, on the idle system, single publications one at a time: the latency a lone listing sees.
 */
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { startChild, type Child } from './children.js'
import { benchApiKey } from './data.js'

/** Agencies subscribed; each publication is delivered to every one of them. */
export const WEBHOOK_SUBSCRIBERS = 50
/** Publications per second: with 50 subscribers, 2,500 deliveries/s offered. */
export const PUBLICATIONS_PER_SECOND = 50
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
}

export async function runWebhooks(
  service: Child,
  env: NodeJS.ProcessEnv,
  databaseUrl: string,
  load: { duration: number; warmup: number },
): Promise<WebhookFigures> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const receiver = await startReceiver(env)
  const workers: Child[] = []
  try {
    // An earlier run's subscriptions and events must not add to this one's work.
    await client.query('delete from webhook_subscriptions')
    await client.query('update events set dispatched_at = now() where dispatched_at is null')
    for (let tenant = 1; tenant <= WEBHOOK_SUBSCRIBERS; tenant++) await subscribe(service, tenant, receiver.urlFor(tenant))
    const payloads = await listingPayloads(service)
    for (let i = 0; i < WORKERS; i++) workers.push(await startChild(`worker ${i + 1}`, 'bench/worker.ts', env))

    process.stderr.write(
      `(f) ${PUBLICATIONS_PER_SECOND} publications/s to ${WEBHOOK_SUBSCRIBERS} subscribers, ${WORKERS} workers: warm-up ${load.warmup} s, then ${load.duration} s… `,
    )
    let publishing = true
    const publisher = publish(client, payloads, () => publishing)
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
    const undelivered = await drain(client)
    process.stderr.write(`done; ${IDLE_PUBLICATIONS} single publications on the idle system… `)
    const idle = await publishOneAtATime(client, payloads, receiver)
    process.stderr.write('done\n')
    // The last single publication has arrived everywhere, but may not be recorded yet.
    const left = await drain(client)
    const counts = await receiver.counts()

    const latencies = measured.latencies.sort((a, b) => a - b)
    const idleLatencies = idle.sort((a, b) => a - b)
    return {
      workers: WORKERS,
      subscribers: WEBHOOK_SUBSCRIBERS,
      publications_per_second: PUBLICATIONS_PER_SECOND,
      offered_deliveries_per_second: PUBLICATIONS_PER_SECOND * WEBHOOK_SUBSCRIBERS,
      deliveries_per_second: Math.round((latencies.length / load.duration) * 10) / 10,
      deliveries_measured: latencies.length,
      latency_p50_ms: quantile(latencies, 0.5),
      latency_p99_ms: quantile(latencies, 0.99),
      latency_max_ms: latencies.at(-1) ?? 0,
      undelivered_after_drain: undelivered,
      repeated_webhook_ids: counts.repeats,
      lost_deliveries: left > 0 ? null : (written + IDLE_PUBLICATIONS) * WEBHOOK_SUBSCRIBERS - counts.distinct,
      receiver_cpu_share: round(measured.cpu_ms / measured.wall_ms, 3),
      worker_cpu_shares: workerShares,
      database_cpu_share: databaseAtStart.size === 0 ? null : round(cpuSpentBy(databaseAtStart, databaseAtEnd) / seconds, 3),
      idle: {
        publications: IDLE_PUBLICATIONS,
        latency_p50_ms: quantile(idleLatencies, 0.5),
        latency_p99_ms: quantile(idleLatencies, 0.99),
        latency_max_ms: idleLatencies.at(-1) ?? 0,
      },
    }
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()))
    await receiver.stop()
    await client.end()
  }
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

/** Writes `mls.new_listing` events at the set rate until told to stop; how many it wrote. */
async function publish(client: pg.Client, payloads: unknown[], going: () => boolean): Promise<number> {
  const started = Date.now()
  let written = 0
  while (going()) {
    const due = Math.floor(((Date.now() - started) / 1000) * PUBLICATIONS_PER_SECOND)
    if (due > written) {
      await writeEvents(
        client,
        Array.from({ length: due - written }, (_, i) => payloads[(written + i) % payloads.length]),
      )
      written = due
    }
    await sleep(TICK_MS)
  }
  return written
}

async function writeEvents(client: pg.Client, data: unknown[]): Promise<void> {
  const batch = data.map((item) => JSON.stringify(item))
  await client.query(`insert into events (type, tenant_id, data) select 'mls.new_listing', 1, data::jsonb from unnest($1::text[]) as data`, [batch])
}

/**
 * Writes single events, each once the one before has reached every subscriber, after a pause
 * of 100 to 300 ms (so that none lines up with a poll); the latencies of their deliveries.
 */
async function publishOneAtATime(client: pg.Client, payloads: unknown[], receiver: Receiver): Promise<number[]> {
  await receiver.startMeasuring()
  for (let i = 0; i < IDLE_PUBLICATIONS; i++) {
    await sleep(100 + Math.random() * 200)
    const before = (await receiver.counts()).distinct
    await writeEvents(client, [payloads[i % payloads.length]])
    const deadline = Date.now() + IDLE_TIMEOUT_MS
    while ((await receiver.counts()).distinct < before + WEBHOOK_SUBSCRIBERS && Date.now() < deadline) await sleep(5)
  }
  return (await receiver.stopMeasuring()).latencies
}
/** Waits for the queue to empty; answers how many deliveries were still waiting at the end. */
async function drain(client: pg.Client): Promise<number> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS
  for (;;) {
    const left = await waiting(client)
    if (left === 0 || Date.now() > deadline) return left
    await sleep(200)
  }
}

/** Deliveries not made yet: those of events not fanned out, and those pending. */
async function waiting(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ left: number }>(
    `select (select count(*) from events where dispatched_at is null)::int * ${WEBHOOK_SUBSCRIBERS}
            + (select count(*) from webhook_deliveries where status = 'pending')::int as left`,
  )
  return rows[0]!.left
}

async function subscribe(service: Child, tenant: number, url: string): Promise<void> {
  const response = await fetch(`${service.url}/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': benchApiKey(tenant) },
    body: JSON.stringify({ url, events: ['mls.new_listing'], description: 'bench receiver' }),
  })
  if (response.status !== 201) throw new Error(`POST /webhooks answered ${response.status}: ${await response.text()}`)
}

/** Real catalogue items, from the catalogue, to carry as the events' data. */
async function listingPayloads(service: Child): Promise<unknown[]> {
  const response = await fetch(`${service.url}/mls/properties?limit=100`)
  const { items } = (await response.json()) as { items: unknown[] }
  if (items.length === 0) throw new Error('The catalogue is empty: nothing to announce.')
  return items
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
