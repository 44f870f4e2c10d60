import { randomBytes, randomUUID } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { Database } from '../../db/client.js'
import { retryingConflicts } from '../../db/conflicts.js'
import { ApiError, WEBHOOK_NOT_FOUND } from '../../lib/errors.js'
import { invalidAddressError, OutboundError, type OutboundClient } from '../../lib/outbound-http.js'
import type { SecretBox } from '../../lib/secrets.js'
import { toOffsetTimestamp } from '../../lib/time.js'
import { filterErrors, type ListingFilter } from '../catalogue/listing-filter.js'
import { isMlsWide, TEST_EVENT } from '../events/event-types.js'
import type { EventsService } from '../events/events.service.js'
import * as deliveries from './deliveries.repository.js'
import type { AttemptToRecord, ClaimedDelivery } from './deliveries.repository.js'
import { deliveryLeaseMs, nextAttemptDelay, type RetryPolicy } from './delivery-policy.js'
import { messageBody, messageId, type WebhookSender } from './webhook-sender.js'
import * as repository from './webhooks.repository.js'
import { filteredSubscription, planFilteredDeliveries, SubscriptionFilters } from './subscription-filters.js'
import type { CreatedWebhookSubscription, DeliveryLogEntry, WebhookCreate, WebhookSubscription, WebhookUpdate } from './webhooks.schemas.js'

export type { AttemptToRecord, ClaimedDelivery } from './deliveries.repository.js'
export { DELIVERIES_CHANNEL } from './deliveries.repository.js'

/** Subscriptions per agency: plenty for real integrations, and a bound on each event's fan-out. */
export const MAX_SUBSCRIPTIONS_PER_TENANT = 20
/** Bytes of a signing secret: Standard Webhooks asks for 24 to 64. */
const SECRET_BYTES = 32
/** Event bodies kept by a worker: more than the events of the deliveries one claim takes. */
const BODIES_KEPT = 1024

function toSubscription(row: repository.SubscriptionRow): WebhookSubscription {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description,
    filter: row.filter,
    is_active: row.isActive,
    created_at: toOffsetTimestamp(row.createdAt),
    disabled_reason: row.disabledReason,
    disabled_at: row.disabledAt === null ? null : toOffsetTimestamp(row.disabledAt),
  }
}

/** The checks of a filter across its parameters, as the catalogue's search makes them: a 422 naming `filter.<parameter>`. */
function checkFilter(filter: ListingFilter | null | undefined): void {
  if (!filter) return
  const errors = filterErrors(filter, ['body', 'filter'])
  if (errors.length > 0) throw ApiError.validation(errors)
}

function toLogEntry(row: deliveries.AttemptRow): DeliveryLogEntry {
  return {
    id: row.id,
    event_id: row.eventId,
    event_type: row.eventType,
    trigger: row.trigger as DeliveryLogEntry['trigger'],
    attempt: row.attempt,
    status: row.status as DeliveryLogEntry['status'],
    response_status_code: row.responseStatusCode,
    response_body: row.responseBody,
    error: row.error,
    duration_ms: row.durationMs,
    created_at: toOffsetTimestamp(row.createdAt),
    next_attempt_at: row.nextAttemptAt === null ? null : toOffsetTimestamp(row.nextAttemptAt),
  }
}

export interface WebhooksOptions {
  allowPrivateNetwork: boolean
  retryPolicy: RetryPolicy
  /** WEBHOOK_TIMEOUT_MS: how long one attempt may take, which sets how long a claim holds a delivery. */
  timeoutMs: number
}

/**
 * Webhook subscriptions, test events and delivery logs for tenants; fan-out and delivery of
 * the outbox's events for the worker. See docs/api.md#webhooks.
 */
export class WebhooksService {
  private readonly leaseMs: number
  private readonly bodies = new LRUCache<string, string>({ max: BODIES_KEPT })
  private readonly filters: SubscriptionFilters

  constructor(
    private readonly db: Database,
    private readonly events: EventsService,
    private readonly secrets: SecretBox,
    private readonly outbound: OutboundClient,
    private readonly sender: WebhookSender,
    private readonly options: WebhooksOptions,
  ) {
    this.leaseMs = deliveryLeaseMs(options.timeoutMs)
    this.filters = new SubscriptionFilters(repository.readSubscriptionsRevision, async (tx) =>
      (await repository.listFilteredSubscriptions(tx)).map(filteredSubscription),
    )
  }

  async create(tenantId: number, input: WebhookCreate): Promise<CreatedWebhookSubscription> {
    checkFilter(input.filter)
    const url = await this.checkUrl(input.url)
    const secret = `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`
    const row = await this.db.transaction(async (tx) => {
      if ((await repository.countSubscriptionsLocked(tx, tenantId)) >= MAX_SUBSCRIPTIONS_PER_TENANT) {
        throw ApiError.conflict(`An agency may have at most ${MAX_SUBSCRIPTIONS_PER_TENANT} webhook subscriptions; delete one first.`)
      }
      // Fan-outs see the subscription whole or not at all, filter included (see lockOutFanOut).
      // After the agency's row, as a suspension takes them, so the two never wait on each other in a circle.
      await deliveries.lockOutFanOut(tx)
      return repository.insertSubscription(tx, {
        tenantId,
        url,
        events: [...new Set(input.events)],
        description: input.description ?? null,
        filter: input.filter ?? null,
        secretSealed: this.secrets.seal(secret),
      })
    })
    return { ...toSubscription(row), secret }
  }

  /**
   * Changes a subscription's URL, events, description or filter. A change of events or filter
   * waits for the fan-outs under way and applies to every event fanned out after it commits. A
   * new URL is a new receiver: the failures of the old one no longer count towards switching
   * the subscription off.
   */
  async update(tenantId: number, id: number, input: WebhookUpdate): Promise<WebhookSubscription> {
    checkFilter(input.filter)
    const url = input.url === undefined ? undefined : await this.checkUrl(input.url)
    const row = await this.db.transaction(async (tx) => {
      if (input.events !== undefined || input.filter !== undefined) await deliveries.lockOutFanOut(tx)
      // The receiver is the URL's, however it is spelled (`Example.com:443` is `example.com`).
      const current = url === undefined ? undefined : await repository.findSubscription(tx, tenantId, id, 'update')
      const newReceiver = url !== undefined && current !== undefined && new URL(current.url).href !== new URL(url).href
      return repository.updateSubscription(
        tx,
        tenantId,
        id,
        {
          ...(url === undefined ? {} : { url }),
          ...(input.events === undefined ? {} : { events: [...new Set(input.events)] }),
          ...(input.description === undefined ? {} : { description: input.description }),
          ...(input.filter === undefined ? {} : { filter: input.filter }),
        },
        { newReceiver },
      )
    })
    if (!row) throw ApiError.notFound(WEBHOOK_NOT_FOUND)
    return toSubscription(row)
  }

  async get(tenantId: number, id: number): Promise<WebhookSubscription> {
    return toSubscription(await this.find(tenantId, id))
  }

  async list(tenantId: number): Promise<WebhookSubscription[]> {
    return (await repository.listSubscriptions(this.db, tenantId)).map(toSubscription)
  }

  /** Deletes the subscription; its pending deliveries go with it, so none is sent afterwards. */
  async remove(tenantId: number, id: number): Promise<void> {
    // Its deliveries are taken in id order, the subscription last (deleteSubscription), but a
    // worker recording a batch of attempts, or a suspension giving deliveries up, takes theirs
    // in the order of one statement's plan: a deadlock with one of them is retried.
    if (!(await retryingConflicts(() => repository.deleteSubscription(this.db, tenantId, id)))) throw ApiError.notFound(WEBHOOK_NOT_FOUND)
  }

  async logs(tenantId: number, id: number, page: { limit: number; offset: number }) {
    await this.find(tenantId, id)
    const { rows, total } = await repository.pageOfAttempts(this.db, tenantId, id, page)
    return { items: rows.map(toLogEntry), total, limit: page.limit, offset: page.offset }
  }

  /**
   * Sends a `webhook.test` event now, once, whatever the subscription's events and state, and
   * answers with the log entry of that attempt, failed or not. The event and its delivery are
   * written before the attempt, claimed by this request: should the process die meanwhile, a
   * worker makes the attempt once the claim's lease runs out.
   */
  async test(tenantId: number, id: number): Promise<DeliveryLogEntry> {
    const leaseToken = randomUUID()
    const claimed = await this.db.transaction(async (tx): Promise<ClaimedDelivery> => {
      // Kept until its delivery is written: a deletion meanwhile waits, or came first (a 404).
      const subscription = await repository.findSubscription(tx, tenantId, id, 'key share')
      if (!subscription) throw ApiError.notFound(WEBHOOK_NOT_FOUND)
      const event = await this.events.recordDispatched(tx, {
        type: TEST_EVENT,
        tenantId,
        data: { subscription_id: subscription.id, message: 'A test event from Open MLS: this subscription receives deliveries.' },
      })
      const deliveryId = await deliveries.insertClaimedTestDelivery(tx, {
        subscriptionId: subscription.id,
        eventId: event.id,
        leaseToken,
        leaseEndsAt: new Date(Date.now() + this.leaseMs),
      })
      return {
        id: deliveryId,
        subscriptionId: subscription.id,
        attempt: 1,
        leaseToken,
        trigger: 'test',
        variant: null,
        url: subscription.url,
        secretSealed: subscription.secretSealed,
        subscriptionFailing: subscription.failingSince !== null,
        event: { id: event.id, type: event.type, createdAt: event.createdAt, data: event.data },
      }
    })
    const recorded = await this.attempt(claimed)
    // Deleted while the attempt was under way: it happened, but there is no log left to show it in.
    if (!recorded) throw ApiError.notFound(WEBHOOK_NOT_FOUND)
    return toLogEntry(recorded)
  }

  /**
   * Turns up to `limit` new outbox events into deliveries, in one insert; how many events it
   * took. Filtered subscriptions of `mls.*` events are matched in memory (subscription-filters.ts).
   */
  async fanOut(limit: number): Promise<number> {
    return this.db.transaction(async (tx) => {
      const batch = await this.events.claimForFanOut(tx, limit)
      if (batch.length === 0) return 0
      await deliveries.holdFanOutLock(tx)
      const mlsWide = batch.filter((event) => isMlsWide(event.type))
      // Read under the fan-out's lock: see SubscriptionFilters.
      const subscriptions = mlsWide.length === 0 ? [] : await this.filters.current(tx)
      await deliveries.createDeliveries(tx, batch, planFilteredDeliveries(mlsWide, subscriptions))
      return batch.length
    })
  }

  /**
   * An agency is suspended, in the caller's transaction: its pending deliveries are given up and
   * it receives nothing until it is unsuspended. See docs/api.md#suspension.
   */
  giveUpDeliveriesOfTenant(tx: Database, tenantId: number): Promise<void> {
    return deliveries.giveUpDeliveriesOfTenant(tx, tenantId)
  }

  /**
   * An agency's suspension is lifted, in the caller's transaction. Nothing was attempted while
   * it lasted, so its days are not days of failures: a failing streak resumes where it stopped.
   */
  resumeAfterSuspension(tx: Database, tenantId: number, suspendedAt: Date): Promise<void> {
    return deliveries.postponeFailingStreaks(tx, tenantId, suspendedAt)
  }

  /**
   * Claims up to `limit` due deliveries for this worker, at most `perSubscription` of any one
   * subscription and none of `busySubscriptions`; each is held for a lease.
   */
  claimDue(options: { limit: number; perSubscription: number; busySubscriptions: readonly number[] }): Promise<ClaimedDelivery[]> {
    return deliveries.claimDeliveries(this.db, { ...options, leaseMs: this.leaseMs })
  }

  /**
   * Makes one claimed attempt and records it. An event's delivery is retried on the schedule;
   * a test event's is not, and leaves the subscription's health alone. Undefined when the
   * claim was lost meanwhile, so nothing was recorded.
   */
  async attempt(delivery: ClaimedDelivery): Promise<deliveries.AttemptRow | undefined> {
    return deliveries.recordAttempt(this.db, await this.send(delivery))
  }

  /**
   * Makes one claimed attempt, to be recorded by recordAttempts (with others) or recordAttempt.
   * An event's delivery is retried on the schedule; a test event's is not, and leaves the
   * subscription's health alone.
   */
  async send(delivery: ClaimedDelivery): Promise<AttemptToRecord> {
    const id = messageId(delivery.event.id, delivery.variant)
    const outcome = await this.sender.send(delivery, { id, body: this.bodyOf(id, delivery.event) })
    const retries = delivery.trigger === 'event'
    const delay = outcome.succeeded || !retries || outcome.gone ? undefined : nextAttemptDelay(delivery.attempt, outcome, this.options.retryPolicy)
    return { claimed: delivery, outcome, retryAt: delay === undefined ? null : new Date(Date.now() + delay), updatesHealth: retries }
  }

  /**
   * Records attempts made by `send`, in one statement while they all succeeded; those whose
   * claim was lost meanwhile are left out. How many were recorded.
   */
  recordAttempts(attempts: readonly AttemptToRecord[]): Promise<number> {
    return deliveries.recordAttempts(this.db, attempts)
  }

  /**
   * An event's body, built once however many subscriptions receive it (an `mls.new_listing` goes
   * to every agency's): the events of the deliveries in hand are few, and their bodies are kept
   * until newer ones push them out.
   */
  private bodyOf(messageId: string, event: ClaimedDelivery['event']): string {
    let body = this.bodies.get(messageId)
    if (body === undefined) {
      body = messageBody(event)
      this.bodies.set(messageId, body)
    }
    return body
  }

  /**
   * Retention: deletes up to `limit` finished deliveries older than `days`, with their attempts,
   * once none of their event's deliveries is pending, in one statement; how many. The events go
   * afterwards, through the events module (EventsService.forgetEventsDoneWith).
   */
  forgetFinishedDeliveries(days: number, limit: number): Promise<number> {
    return deliveries.deleteFinishedDeliveries(this.db, days, limit)
  }

  private async find(tenantId: number, id: number): Promise<repository.SubscriptionRow> {
    const row = await repository.findSubscription(this.db, tenantId, id)
    if (!row) throw ApiError.notFound(WEBHOOK_NOT_FOUND)
    return row
  }

  /** https (http only with ALLOW_PRIVATE_NETWORK), no credentials, a public host. */
  private async checkUrl(raw: string): Promise<string> {
    try {
      const url = await this.outbound.checkUrl(raw)
      if (url.protocol !== 'https:' && !this.options.allowPrivateNetwork) throw invalidAddressError('url', 'Invalid webhook url', 'must use https')
    } catch (error) {
      if (error instanceof OutboundError) throw invalidAddressError('url', 'Invalid webhook url', error)
      throw error
    }
    // Kept as the tenant wrote it, so the list shows what they gave.
    return raw
  }
}
