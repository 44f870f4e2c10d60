/**
 * Scenario (f): webhook deliveries. Agencies subscribe a fast local receiver (in this
 * process) to `mls.new_listing`; the bench writes publications' events to the outbox at a
 * steady rate, each one the catalogue item of a real listing, exactly as the internal check
 * writes them when it publishes; two worker processes fan them out and deliver them. The
 * receiver counts deliveries per second and the latency from the event's time (the
 * publication) to its arrival.
 */
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { startChild, type Child } from './children.js'
import { benchApiKey } from './data.js'

/** Agencies subscribed; each publication is delivered to every one of them. */
export const WEBHOOK_SUBSCRIBERS = 20
/** Publications per second: with 20 subscribers, 800 deliveries/s offered. */
export const PUBLICATIONS_PER_SECOND = 40
const WORKERS = 2
/** Events are written in small batches this often, so the rate is steady. */
const TICK_MS = 50
/** After the run, how long the queue may take to drain before what is left is reported. */
const DRAIN_TIMEOUT_MS = 15_000

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
}

export async function runWebhooks(
  service: Child,
  env: NodeJS.ProcessEnv,
  databaseUrl: string,
  load: { duration: number; warmup: number },
): Promise<WebhookFigures> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const receiver = await startReceiver()
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
    receiver.startMeasuring()
    await sleep(load.duration * 1000)
    const measured = receiver.stopMeasuring()
    publishing = false
    await publisher
    const undelivered = await drain(client)
    process.stderr.write('done\n')

    const latencies = measured.latencies.sort((a, b) => a - b)
    const quantile = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0
    return {
      workers: WORKERS,
      subscribers: WEBHOOK_SUBSCRIBERS,
      publications_per_second: PUBLICATIONS_PER_SECOND,
      offered_deliveries_per_second: PUBLICATIONS_PER_SECOND * WEBHOOK_SUBSCRIBERS,
      deliveries_per_second: Math.round((latencies.length / load.duration) * 10) / 10,
      deliveries_measured: latencies.length,
      latency_p50_ms: quantile(0.5),
      latency_p99_ms: quantile(0.99),
      latency_max_ms: latencies.at(-1) ?? 0,
      undelivered_after_drain: undelivered,
      repeated_webhook_ids: receiver.repeats(),
    }
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()))
    await receiver.close()
    await client.end()
  }
}

/** Writes `mls.new_listing` events at the set rate until told to stop. */
async function publish(client: pg.Client, payloads: unknown[], going: () => boolean): Promise<void> {
  const started = Date.now()
  let written = 0
  let next = 0
  while (going()) {
    const due = Math.floor(((Date.now() - started) / 1000) * PUBLICATIONS_PER_SECOND)
    if (due > written) {
      const batch = Array.from({ length: due - written }, () => JSON.stringify(payloads[next++ % payloads.length]))
      await client.query(`insert into events (type, tenant_id, data) select 'mls.new_listing', 1, data::jsonb from unnest($1::text[]) as data`, [batch])
      written = due
    }
    await sleep(TICK_MS)
  }
}

/** Waits for the queue to empty; answers how many deliveries were still waiting at the end. */
async function drain(client: pg.Client): Promise<number> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS
  for (;;) {
    const { rows } = await client.query<{ left: number }>(
      `select (select count(*) from events where dispatched_at is null)::int * ${WEBHOOK_SUBSCRIBERS}
              + (select count(*) from webhook_deliveries where status = 'pending')::int as left`,
    )
    const left = rows[0]!.left
    if (left === 0 || Date.now() > deadline) return left
    await sleep(200)
  }
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

/** Answers 204 at once; while measuring, keeps each delivery's latency from its event's time. */
async function startReceiver() {
  let measuring = false
  let latencies: number[] = []
  const seen = new Set<string>()
  let repeats = 0
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      response.writeHead(204).end()
      const id = `${String(request.headers['webhook-id'])} ${request.url}`
      if (seen.has(id)) repeats++
      seen.add(id)
      if (!measuring) return
      const { timestamp } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { timestamp: string }
      latencies.push(Date.now() - Date.parse(timestamp))
    })
  })
  server.keepAliveTimeout = 30_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    /** Each subscriber gets its own path, so one webhook-id reaching several is no repeat. */
    urlFor: (subscriber: number) => `${base}/hooks/${subscriber}`,
    startMeasuring() {
      latencies = []
      measuring = true
    },
    stopMeasuring() {
      measuring = false
      return { latencies }
    },
    repeats: () => repeats,
    async close() {
      server.closeAllConnections()
      server.close()
    },
  }
}
