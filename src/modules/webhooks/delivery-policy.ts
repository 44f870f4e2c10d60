/**
 * The rules of retries and leases, pure so they can be read and tested on their own. See
 * docs/api.md#webhooks.
 */
import type { AttemptOutcome } from './webhook-sender.js'

/** A subscription with no successful delivery for this long is switched off. */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 60 * 60 * 1000
/** Retries land within ±10 % of the schedule, so a receiver's outage does not end in a stampede. */
const JITTER = 0.1
/** The longest a `Retry-After` may push the next attempt. */
const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000

export interface RetryPolicy {
  /** Delays after the first attempt, then after each retry (WEBHOOK_RETRY_SCHEDULE). */
  scheduleMs: readonly number[]
}

/** When the next attempt is due after `attempt` failed, or undefined when the schedule is spent. */
export function nextAttemptDelay(attempt: number, outcome: Pick<AttemptOutcome, 'retryAfterMs'>, policy: RetryPolicy): number | undefined {
  const scheduled = policy.scheduleMs[attempt - 1]
  if (scheduled === undefined) return undefined
  const jittered = Math.round(scheduled * (1 - JITTER + 2 * JITTER * Math.random()))
  // Retry-After is honoured as "not before": a receiver may slow the schedule, not hurry it.
  const asked = outcome.retryAfterMs === undefined ? 0 : Math.min(outcome.retryAfterMs, MAX_RETRY_AFTER_MS)
  return Math.max(jittered, asked)
}

/**
 * How long a claim holds a delivery: an attempt lasts at most WEBHOOK_TIMEOUT_MS, and the
 * margin covers recording it on a busy database. A shorter lease would let a second worker
 * send while the first is still waiting for its answer.
 */
export function deliveryLeaseMs(timeoutMs: number): number {
  return 2 * timeoutMs + 1000
}

/** Whether a failing streak that began at `failingSince` has lasted long enough to switch the subscription off. */
export function failedTooLong(failingSince: Date, now = Date.now()): boolean {
  return now - failingSince.getTime() >= DISABLE_AFTER_FAILING_MS
}
