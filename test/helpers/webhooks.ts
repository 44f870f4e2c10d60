import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import pino, { type Logger } from 'pino'
import { Webhook } from 'standardwebhooks'
import type { Config } from '../../src/config.js'
import { sql } from 'drizzle-orm'
import { queryRows, type Database, type DatabaseHandle } from '../../src/db/client.js'
import { webhookJobs } from '../../src/modules/webhooks/webhooks.jobs.js'
import type { SubscribableEvent } from '../../src/modules/events/event-types.js'
import type { CreatedWebhookSubscription, WebhookCreate } from '../../src/modules/webhooks/webhooks.schemas.js'
import { createServices } from '../../src/services.js'
import { Worker } from '../../src/worker/worker.js'
import type { Tenant } from './factories.js'
import type { DeliveryLogPage } from './responses.js'

export interface ReceivedRequest {
  /** The path and query it was sent to. */
  url: string
  headers: IncomingMessage['headers']
  body: string
  receivedAt: number
  /** What the receiver answered. */
  status: number
}

type Answer = { status: number; headers?: Record<string, string>; body?: string; breakOff?: true; stall?: true } | 'hang' | 'close' | 'not-http'

/**
 * A webhook receiver on loopback, as an agency would run one: it records every request and
 * answers what `answer` says (202 by default); `hang` never answers, `close` closes the
 * connection without answering, `not-http` answers a line that is not HTTP, `breakOff`
 * closes it after the status and the first bytes of a longer body, and `stall` sends those and
 * then nothing more.
 */
export async function startReceiver(
  answer: (request: { headers: IncomingMessage['headers']; body: string; index: number }) => Answer = () => ({ status: 202 }),
) {
  const requests: ReceivedRequest[] = []
  const hanging: ServerResponse[] = []
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => answerRequest(request, response, Buffer.concat(chunks).toString('utf8')))
  })
  const answerRequest = (request: IncomingMessage, response: ServerResponse, body: string) => {
    const decided = answer({ headers: request.headers, body, index: requests.length })
    if (decided === 'hang') {
      hanging.push(response)
      return
    }
    if (decided === 'close') return request.socket.destroy()
    if (decided === 'not-http') return request.socket.end('this is not an HTTP answer\r\n\r\n')
    requests.push({ url: request.url ?? '', headers: request.headers, body, receivedAt: Date.now(), status: decided.status })
    if (decided.breakOff || decided.stall) {
      response.writeHead(decided.status, { ...decided.headers, 'content-length': '100' })
      if (decided.stall) hanging.push(response)
      return response.write('partial', () => decided.breakOff && request.socket.destroy())
    }
    response.writeHead(decided.status, decided.headers).end(decided.body ?? '')
  }
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
  return {
    url,
    requests,
    /** Requests answered 2xx. */
    delivered: () => requests.filter((request) => request.status >= 200 && request.status < 300),
    async close() {
      for (const response of hanging) response.destroy()
      server.closeAllConnections()
      server.close()
    },
  }
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>

/** What every delivery's body carries. */
export interface WebhookMessage {
  type: string
  timestamp: string
  data: Record<string, unknown>
}

/** Verifies a delivery the way a receiver would, with the `standardwebhooks` package; throws if forged. */
export function verifyDelivery(secret: string, request: ReceivedRequest): WebhookMessage {
  const headers = {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  }
  return new Webhook(secret).verify(request.body, headers) as WebhookMessage
}

/**
 * The body of POST /webhooks. The events are named here: the schema builds their union from
 * the list of events at run time, so its static type cannot name them.
 */
export type SubscriptionRequest = Omit<WebhookCreate, 'events'> & { events: SubscribableEvent[] }

/** POST /webhooks as the tenant; the subscription with its signing secret, shown only then. */
export async function subscribe(app: FastifyInstance, tenant: Tenant, payload: SubscriptionRequest): Promise<CreatedWebhookSubscription> {
  const response = await app.inject({ method: 'POST', url: '/webhooks', headers: tenant.headers, payload })
  assert.equal(response.statusCode, 201, response.body)
  return response.json<CreatedWebhookSubscription>()
}

export async function deliveryLog(app: FastifyInstance, tenant: Tenant, subscriptionId: number, query = ''): Promise<DeliveryLogPage> {
  const response = await app.inject({ method: 'GET', url: `/webhooks/${subscriptionId}/logs${query}`, headers: tenant.headers })
  assert.equal(response.statusCode, 200, response.body)
  return response.json<DeliveryLogPage>()
}

/**
 * A worker running only the webhook jobs (fan-out and delivery), with services of its own on
 * `database`, as a worker process would.
 */
export function startWebhookWorker(database: DatabaseHandle, config: Config, log: Logger = pino({ level: 'silent' })): RunningWorker {
  const services = createServices({ config, database })
  const worker = new Worker(
    { services, config, log },
    webhookJobs({ pollIntervalMs: config.webhookPollIntervalMs, concurrency: config.webhookDeliveryConcurrency }),
    database,
  )
  worker.start()
  return {
    async stop() {
      await worker.stop()
      await services.close()
    },
  }
}

export interface RunningWorker {
  stop(): Promise<void>
}

/**
 * One request per message: deliveries are at least once, so a receiver may get a message again
 * (an attempt timed out after it arrived), always with the same `webhook-id`. Counting
 * messages rather than requests asserts the contract, whatever a busy machine did to timing.
 */
export function distinctMessages(requests: readonly ReceivedRequest[]): ReceivedRequest[] {
  const seen = new Set<string>()
  return requests.filter((request) => {
    const id = String(request.headers['webhook-id'])
    if (seen.has(id)) return false
    seen.add(id)
    return true
  })
}

/**
 * Waits until the outbox has nothing left to send: every event fanned out and no delivery
 * pending (an attempt in flight keeps its delivery pending until it is recorded). From then on
 * nothing more reaches any receiver, so what one did not get, it never will.
 */
export async function waitForOutboxDrained(db: Database, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    async () => {
      const [row] = await queryRows<{ waiting: number }>(
        db,
        sql`select (select count(*) from events where dispatched_at is null)::int
                 + (select count(*) from webhook_deliveries where status = 'pending')::int as waiting`,
      )
      return row!.waiting === 0
    },
    timeoutMs,
    'the outbox to drain',
  )
}

/** Waits until `condition` holds, checking every 20 ms, or fails after `timeoutMs`: generous, as CI machines are shared and busy. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 30_000, what = 'the condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`Timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(20)
  }
}

/** `count` property.published events of the tenant in the outbox, as publications write them. */
export async function writePublishedEvents(db: Database, tenant: Tenant, count: number): Promise<void> {
  await db.execute(
    sql`insert into events (type, tenant_id, data)
        select 'property.published', ${tenant.tenantId}::int, jsonb_build_object('property_id', n)
        from generate_series(1, ${count}::int) as n`,
  )
}
