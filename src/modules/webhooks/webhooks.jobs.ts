import { isDatabaseUnavailable } from '../../db/availability.js'
import type { Job, JobContext } from '../../worker/job.js'
import type { ClaimedDelivery } from './webhooks.service.js'

/** Events fanned out per statement. */
const FAN_OUT_BATCH = 200
/** Attempts one worker has in flight at once. */
export const DELIVERY_CONCURRENCY = 64
/** Of which at most this many to one subscription, so a slow receiver cannot hold every slot. */
export const DELIVERY_PER_SUBSCRIPTION = 8

/** Turns new outbox events into deliveries, within a fifth of a second. */
export const webhookFanOutJob: Job = {
  name: 'webhook-fan-out',
  idleDelayMs: 200,
  runOnce: ({ services }) => services.webhooks.fanOut(FAN_OUT_BATCH),
}

/**
 * Sends due deliveries, many at once: each claim takes as many as there are free slots, and
 * the attempts run while the next claim is made. A worker that stops finishes the attempts
 * it has in hand (each ends within WEBHOOK_TIMEOUT_MS) and records them.
 */
export class WebhookDeliveryJob implements Job {
  readonly name = 'webhook-delivery'
  readonly idleDelayMs = 200
  private readonly running = new Set<Promise<void>>()
  private readonly perSubscription = new Map<number, number>()

  async runOnce(context: JobContext): Promise<number> {
    if (this.running.size >= DELIVERY_CONCURRENCY) {
      await Promise.race(this.running)
      return 1
    }
    const busy = [...this.perSubscription].filter(([, count]) => count >= DELIVERY_PER_SUBSCRIPTION).map(([id]) => id)
    const claimed = await context.services.webhooks.claimDue({
      limit: DELIVERY_CONCURRENCY - this.running.size,
      perSubscription: DELIVERY_PER_SUBSCRIPTION,
      busySubscriptions: busy,
    })
    for (const delivery of claimed) this.start(delivery, context)
    if (claimed.length > 0 || this.running.size === 0) return claimed.length
    // Nothing more may be claimed while these run (their subscriptions are at their share):
    // the next claim is worth making as soon as one ends, not after the idle pause.
    await Promise.race(this.running)
    return 1
  }

  async stop(): Promise<void> {
    await Promise.all(this.running)
  }

  private start(delivery: ClaimedDelivery, { services, log }: JobContext): void {
    const subscription = delivery.subscriptionId
    this.perSubscription.set(subscription, (this.perSubscription.get(subscription) ?? 0) + 1)
    const attempt = services.webhooks
      .attempt(delivery)
      .then(
        () => undefined,
        // Unrecorded, the delivery is due again when its lease ends: sent twice, never lost. An
        // unreachable database is logged once by the worker's loop, not once per attempt.
        (error: unknown) => log[isDatabaseUnavailable(error) ? 'debug' : 'error']({ err: error, delivery: delivery.id }, 'webhook attempt not recorded'),
      )
      .finally(() => {
        this.running.delete(attempt)
        const left = (this.perSubscription.get(subscription) ?? 1) - 1
        if (left === 0) this.perSubscription.delete(subscription)
        else this.perSubscription.set(subscription, left)
      })
    this.running.add(attempt)
  }
}
