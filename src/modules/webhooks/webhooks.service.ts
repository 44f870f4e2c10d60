import { randomBytes, randomUUID } from 'node:crypto'
import { eq } from 'drizzle-orm'
import type { Database } from '../../db/client.js'
import { events, tenants, webhookDeliveries } from '../../db/schema.js'
import { ApiError } from '../../lib/errors.js'
import { OutboundError, type OutboundClient } from '../../lib/outbound-http.js'
import type { SecretBox } from '../../lib/secrets.js'
import { toOffsetTimestamp } from '../../lib/time.js'
import { recordAttempt, type ClaimedDelivery, type RetryPolicy } from './webhook-deliveries.js'
import { messageBody, messageId, type WebhookSender } from './webhook-sender.js'
import * as repository from './webhooks.repository.js'
import type { CreatedWebhookSubscription, DeliveryLogEntry, WebhookCreate, WebhookSubscription } from './webhooks.schemas.js'

export const WEBHOOK_NOT_FOUND = 'Webhook not found'
/** Subscriptions per agency: plenty for real integrations, and a bound on each event's fan-out. */
export const MAX_SUBSCRIPTIONS_PER_TENANT = 20
/** Bytes of a signing secret: Standard Webhooks asks for 24 to 64. */
const SECRET_BYTES = 32

export function toSubscription(row: repository.SubscriptionRow): WebhookSubscription {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description,
    is_active: row.isActive,
    created_at: toOffsetTimestamp(row.createdAt),
    disabled_reason: row.disabledReason,
    disabled_at: row.disabledAt === null ? null : toOffsetTimestamp(row.disabledAt),
  }
}

export function toLogEntry(row: repository.AttemptRow): DeliveryLogEntry {
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

/** A tenant's webhook subscriptions, test events and delivery logs (§4.5, D8). */
export class WebhooksService {
  constructor(
    private readonly db: Database,
    private readonly secrets: SecretBox,
    private readonly outbound: OutboundClient,
    private readonly sender: WebhookSender,
    private readonly options: { allowPrivateNetwork: boolean; retryPolicy: RetryPolicy; leaseMs: number },
  ) {}

  async create(tenantId: number, input: WebhookCreate): Promise<CreatedWebhookSubscription> {
    const url = await this.checkUrl(input.url)
    const secret = `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`
    const row = await this.db.transaction(async (tx) => {
      // Holding the tenant's row makes the count and the insert one step for concurrent creates.
      await tx.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, tenantId)).for('update')
      if ((await repository.countSubscriptions(tx, tenantId)) >= MAX_SUBSCRIPTIONS_PER_TENANT) {
        throw ApiError.validation(
          [{ loc: ['body'], msg: `an agency may have at most ${MAX_SUBSCRIPTIONS_PER_TENANT} subscriptions` }],
          `An agency may have at most ${MAX_SUBSCRIPTIONS_PER_TENANT} webhook subscriptions; delete one first.`,
        )
      }
      return repository.insertSubscription(tx, {
        tenantId,
        url,
        events: [...new Set(input.events)],
        description: input.description ?? null,
        secretSealed: this.secrets.seal(secret),
      })
    })
    return { ...toSubscription(row), secret }
  }

  async list(tenantId: number): Promise<WebhookSubscription[]> {
    return (await repository.listSubscriptions(this.db, tenantId)).map(toSubscription)
  }

  /** Deletes the subscription; its pending deliveries go with it, so none is sent afterwards. */
  async remove(tenantId: number, id: number): Promise<void> {
    if (!(await repository.deleteSubscription(this.db, tenantId, id))) throw ApiError.notFound(WEBHOOK_NOT_FOUND)
  }

  async logs(tenantId: number, id: number, page: { limit: number; offset: number }) {
    await this.find(tenantId, id)
    const { rows, total } = await repository.pageOfAttempts(this.db, id, page)
    return { items: rows.map(toLogEntry), total, limit: page.limit, offset: page.offset }
  }

  /**
   * Sends a `webhook.test` event now, once, whatever the subscription's events and state, and
   * answers with the log entry of that attempt, failed or not. The event and its delivery are
   * written before the attempt, claimed by this request: should the process die meanwhile, a
   * worker makes the attempt once the claim's lease runs out.
   */
  async test(tenantId: number, id: number): Promise<DeliveryLogEntry> {
    const subscription = await this.find(tenantId, id)
    const leaseToken = randomUUID()
    const claimed = await this.db.transaction(async (tx) => {
      const [event] = await tx
        .insert(events)
        .values({
          type: 'webhook.test',
          tenantId,
          data: { subscription_id: subscription.id, message: 'A test event from Open MLS: this subscription receives deliveries.' },
          // Sent here, not fanned out by the workers.
          dispatchedAt: new Date(),
        })
        .returning()
      const [delivery] = await tx
        .insert(webhookDeliveries)
        .values({
          subscriptionId: subscription.id,
          eventId: event!.id,
          trigger: 'test',
          attempts: 1,
          leaseToken,
          nextAttemptAt: new Date(Date.now() + this.options.leaseMs),
        })
        .returning({ id: webhookDeliveries.id })
      return {
        id: delivery!.id,
        subscriptionId: subscription.id,
        attempt: 1,
        leaseToken,
        trigger: 'test',
        url: subscription.url,
        secretSealed: subscription.secretSealed,
        subscriptionFailing: subscription.failingSince !== null,
        event: { id: event!.id, type: event!.type, createdAt: event!.createdAt, data: event!.data },
      } satisfies ClaimedDelivery
    })
    const outcome = await this.sender.send(claimed, { id: messageId(claimed.event.id), body: messageBody(claimed.event) })
    const recorded = await recordAttempt(this.db, claimed, outcome, { policy: this.options.retryPolicy, retries: false })
    // Deleted while the attempt was under way: it happened, but there is no log left to show it in.
    if (!recorded) throw ApiError.notFound(WEBHOOK_NOT_FOUND)
    return toLogEntry(recorded)
  }

  private async find(tenantId: number, id: number): Promise<repository.SubscriptionRow> {
    const row = await repository.findSubscription(this.db, tenantId, id)
    if (!row) throw ApiError.notFound(WEBHOOK_NOT_FOUND)
    return row
  }

  /** D8: https (http only with ALLOW_PRIVATE_NETWORK), no credentials, a public host. */
  private async checkUrl(raw: string): Promise<string> {
    const invalid = (msg: string) => ApiError.validation([{ loc: ['body', 'url'], msg }], `Invalid webhook url: ${msg}.`)
    let url: URL
    try {
      url = await this.outbound.checkUrl(raw)
    } catch (error) {
      if (error instanceof OutboundError) throw invalid(lowerFirst(error.message.replace(/\.$/, '')))
      throw error
    }
    if (url.protocol !== 'https:' && !this.options.allowPrivateNetwork) throw invalid('must use https')
    // Kept as the tenant wrote it, so the list shows what they gave.
    return raw
  }
}

const lowerFirst = (text: string) => text.charAt(0).toLowerCase() + text.slice(1)
