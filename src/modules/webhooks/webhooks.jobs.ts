import { isDatabaseUnavailable } from '../../db/availability.js'
import type { Job, JobContext } from '../../worker/job.js'
import { EVENTS_CHANNEL } from '../events/event-types.js'
import { DELIVERIES_CHANNEL, type AttemptToRecord, type ClaimedDelivery } from './webhooks.service.js'

/** Events fanned out per statement. */
const FAN_OUT_BATCH = 200
/** Of a worker's attempts in flight, at most this many to one subscription, so a slow receiver cannot hold every slot. */
export const DELIVERY_PER_SUBSCRIPTION = 8
/** Attempts recorded per statement at most. */
const RECORD_BATCH = 500

export interface WebhookJobsOptions {
  /** WEBHOOK_POLL_INTERVAL_MS: how often an idle job looks for work nobody announced. */
  pollIntervalMs: number
  /** WEBHOOK_DELIVERY_CONCURRENCY: attempts one worker has in flight at once. */
  concurrency: number
}

/**
 * Fan-out and delivery. Each is woken at once by a NOTIFY (PostgreSQL): fan-out when events are
 * written to the outbox, delivery when fan-out created deliveries; otherwise, and for
 * retries that come due, they poll.
 */
export function webhookJobs(options: WebhookJobsOptions): Job[] {
  return [webhookFanOutJob(options), new WebhookDeliveryJob(options)]
}

/** Turns new outbox events into deliveries. */
function webhookFanOutJob(options: WebhookJobsOptions): Job {
  return {
    name: 'webhook-fan-out',
    idleDelayMs: options.pollIntervalMs,
    wakeOn: [EVENTS_CHANNEL],
    runOnce: ({ services }) => services.webhooks.fanOut(FAN_OUT_BATCH),
  }
}

/**
 * Sends due deliveries, many at once: each claim takes as many as there are free slots, and
 * the attempts run while the next claim is made. Attempts are recorded as they end, many per
 * statement (see AttemptRecorder); a slot is free again once its attempt is recorded. A
 * worker that stops finishes the attempts it has in hand (each ends within
 * WEBHOOK_TIMEOUT_MS) and records them.
 */
export class WebhookDeliveryJob implements Job {
  readonly name = 'webhook-delivery'
  readonly wakeOn = [DELIVERIES_CHANNEL]
  readonly idleDelayMs: number
  private readonly concurrency: number
  /** A claim waits for this many free slots while attempts run, so that claims are not made one slot at a time. */
  private readonly claimAtLeast: number
  private readonly running = new Set<Promise<void>>()
  private readonly perSubscription = new Map<number, number>()
  private recorder: AttemptRecorder | undefined

  constructor(options: WebhookJobsOptions) {
    this.idleDelayMs = options.pollIntervalMs
    this.concurrency = options.concurrency
    this.claimAtLeast = Math.max(1, Math.floor(options.concurrency / 8))
  }

  async runOnce(context: JobContext): Promise<number> {
    if (this.running.size > this.concurrency - this.claimAtLeast) {
      await Promise.race(this.running)
      return 1
    }
    const busy = [...this.perSubscription].filter(([, count]) => count >= DELIVERY_PER_SUBSCRIPTION).map(([id]) => id)
    const claimed = await context.services.webhooks.claimDue({
      limit: this.concurrency - this.running.size,
      perSubscription: DELIVERY_PER_SUBSCRIPTION,
      busySubscriptions: busy,
    })
    for (const delivery of claimed) this.start(delivery, context)
    if (claimed.length > 0 || this.running.size === 0) return claimed.length
    // Nothing more may be claimed while these run (their subscriptions are at their share): the
    // next claim is worth making as soon as one ends, or after the idle pause for work of other
    // subscriptions, whichever comes first. A receiver holding its attempts holds nothing else.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([...this.running, new Promise((resolve) => (timer = setTimeout(resolve, this.idleDelayMs)))])
    clearTimeout(timer)
    return 1
  }

  async stop(): Promise<void> {
    await Promise.all(this.running)
  }

  private start(delivery: ClaimedDelivery, context: JobContext): void {
    const { services, log } = context
    this.recorder ??= new AttemptRecorder((attempts) => services.webhooks.recordAttempts(attempts), log)
    const recorder = this.recorder
    const subscription = delivery.subscriptionId
    this.perSubscription.set(subscription, (this.perSubscription.get(subscription) ?? 0) + 1)
    const attempt = services.webhooks
      .send(delivery)
      .then(
        (made) => recorder.record(made),
        (error: unknown) => log.error({ err: error, delivery: delivery.id }, 'webhook attempt failed'),
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

/**
 * Records attempts as they end, many per statement: while one batch is being written, those
 * that end meanwhile wait and go together in the next. An idle worker records an attempt
 * alone, at once; a busy one writes a statement for tens of them instead of a transaction
 * for each. A batch that cannot be written is not retried: its deliveries are due again when
 * their leases end, so they are sent again, never lost.
 */
class AttemptRecorder {
  private waiting: { attempt: AttemptToRecord; done: () => void }[] = []
  private writing = false

  constructor(
    private readonly write: (attempts: readonly AttemptToRecord[]) => Promise<number>,
    private readonly log: JobContext['log'],
  ) {}

  /** Resolves once the attempt is recorded, or once its batch failed (and was logged). */
  record(attempt: AttemptToRecord): Promise<void> {
    return new Promise((done) => {
      this.waiting.push({ attempt, done })
      if (!this.writing) void this.writeAll()
    })
  }

  private async writeAll(): Promise<void> {
    this.writing = true
    // Attempts that end in this turn of the event loop join the first batch.
    await new Promise((resolve) => setImmediate(resolve))
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, RECORD_BATCH)
      try {
        await this.write(batch.map((entry) => entry.attempt))
      } catch (error) {
        // An unreachable database is logged once by the worker's loop, not once per batch.
        this.log[isDatabaseUnavailable(error) ? 'debug' : 'error']({ err: error, attempts: batch.length }, 'webhook attempts not recorded')
      }
      for (const entry of batch) entry.done()
    }
    this.writing = false
  }
}
