import type { Job } from '../../worker/job.js'

/** Rows per statement: each batch commits on its own, so no lock is held for long. */
export const RETENTION_BATCH = 1000

/**
 * Deletes events older than EVENT_RETENTION_DAYS, with their deliveries and attempts, once
 * nothing is pending for them. Each module deletes its own rows (one writer per table), and a
 * batch of deliveries is bounded where deleting events would not be: an `mls.new_listing` has
 * a delivery per subscription of every agency. So the webhooks module first deletes the
 * finished deliveries (their attempts cascade), then the events module the events no delivery
 * names. One batch per run; the worker runs again at once while a batch found work.
 */
export const eventRetentionJob: Job = {
  name: 'event-retention',
  idleDelayMs: 10 * 60_000,
  runOnce: async ({ services, config }) => {
    const days = config.retention.eventDays
    const deliveries = await services.webhooks.forgetFinishedDeliveries(days, RETENTION_BATCH)
    if (deliveries > 0) return deliveries
    return services.events.forgetEventsDoneWith(days, RETENTION_BATCH)
  },
}
