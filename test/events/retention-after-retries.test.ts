import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/factories.js'
import { eventRetentionJob } from '../../src/modules/events/event-retention.job.js'
import { jobContext, runWhileWorkRemains } from '../helpers/jobs.js'
import { deliveryLog, startReceiver, startWebhookWorker, subscribe, waitForOutboxDrained, writePublishedEvents } from '../helpers/webhooks.js'

describe('event retention counts its days from when nothing is pending any more', () => {
  let t: TestApp

  before(async () => {
    // One day of retention; a failed attempt is retried 100 ms later.
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', EVENT_RETENTION_DAYS: '1', WEBHOOK_RETRY_SCHEDULE: '100ms' })
  })
  after(() => t.close())

  // docs/operations.md, EVENT_RETENTION_DAYS: "days events, their deliveries and delivery logs are
  // kept once nothing is pending for them"; docs/api.md, GET /webhooks/{id}/logs: "kept for 30
  // days (the operator's EVENT_RETENTION_DAYS) once the event's deliveries are done".
  it('keeps the log of a delivery that succeeded just now after two days of retries', async (test) => {
    const agency = await createTenant(t.app, { email: 'retention-after-retries@agency.example' })
    // The first attempt fails, the retry succeeds.
    const receiver = await startReceiver(({ index }) => ({ status: index === 0 ? 503 : 200 }))
    const hook = await subscribe(t.app, agency, { url: receiver.url, events: ['property.published'] })
    const worker = startWebhookWorker(t.database.handle, t.config)
    test.after(async () => {
      await receiver.close()
      await worker.stop()
    })
    await writePublishedEvents(t.db, agency, 1)
    await waitForOutboxDrained(t.db, 30_000)
    assert.deepEqual(
      (await deliveryLog(t.app, agency, hook.id)).items.map((entry) => entry.status),
      ['succeeded', 'failed'],
    )

    // As if the first attempt had been made two days ago and the retries had gone on since: the
    // event, its delivery and that attempt are two days old; the success is from just now.
    await t.db.execute(sql`update events set created_at = created_at - interval '2 days' where tenant_id = ${agency.tenantId}::int`)
    await t.db.execute(sql`update webhook_deliveries set created_at = created_at - interval '2 days' where subscription_id = ${hook.id}::int`)
    await t.db.execute(sql`update webhook_attempts set created_at = created_at - interval '2 days' where subscription_id = ${hook.id}::int and attempt = 1`)

    await runWhileWorkRemains(eventRetentionJob, jobContext(t))

    assert.deepEqual(
      (await deliveryLog(t.app, agency, hook.id)).items.map((entry) => entry.status),
      ['succeeded', 'failed'],
      'the log of a delivery done moments ago is gone, a day before EVENT_RETENTION_DAYS (1) has passed since it was done',
    )
  })
})
