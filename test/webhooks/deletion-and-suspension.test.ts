import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { openDatabase, queryRows } from '../../src/db/client.js'
import type { WebhookSubscription } from '../../src/modules/webhooks/webhooks.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { engine } from '../helpers/database.js'
import { adminHeaders, createTenant } from '../helpers/factories.js'
import { capturedLog } from '../helpers/jobs.js'
import { deliveryLog, startReceiver, startWebhookWorker, subscribe, waitFor, writePublishedEvents, type Receiver } from '../helpers/webhooks.js'

const ENV = { ALLOW_PRIVATE_NETWORK: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,500ms', WEBHOOK_TIMEOUT_MS: '3000', WEBHOOK_POLL_INTERVAL_MS: '50' }

describe('a subscription deleted or its agency suspended while deliveries go on', () => {
  let t: TestApp
  let agencies = 0
  const cleanups: (() => Promise<void>)[] = []
  before(async () => {
    t = await buildTestApp(ENV)
  })
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
    await t.close()
  })
  const newAgency = () => createTenant(t.app, { email: `lifecycle-${++agencies}@agency.example` })
  async function receiver(answer?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
    const started = await startReceiver(answer)
    cleanups.push(() => started.close())
    return started
  }

  it(
    'deletes a subscription (204) while a worker records its attempts, the two never deadlocked',
    { skip: engine === 'pglite' && 'PGlite runs one statement at a time: no two transactions wait on each other' },
    async () => {
      const agency = await newAgency()
      // The receiver holds its answers until the test lets them go.
      const held: ServerResponse[] = []
      const server = createServer((request, response) => {
        request.resume()
        request.on('end', () => held.push(response))
      })
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      cleanups.push(async () => {
        for (const response of held.splice(0)) response.destroy()
        server.closeAllConnections()
        server.close()
      })
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
      const subscription = await subscribe(t.app, agency, { url, events: ['property.published'] })
      const { log, lines } = capturedLog()
      const worker = startWebhookWorker(t.database.handle, t.config, log)
      // Another session holds the subscription's row a moment, as any statement on it may: it
      // only orders the two below (the deletion waiting first, then the worker recording),
      // which a loop of tries would meet now and then.
      const other = await openDatabase({ databaseUrl: t.database.url, pgliteDir: undefined, poolSize: 2 })
      cleanups.push(() => other.close())
      let release!: () => void
      const released = new Promise<void>((resolve) => (release = resolve))
      let holding!: () => void
      const rowHeld = new Promise<void>((resolve) => (holding = resolve))
      const waitingOnALock = (pattern: string) =>
        waitFor(
          async () => {
            const [row] = await queryRows<{ n: number }>(
              other.db,
              sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query ilike ${pattern}`,
            )
            return row!.n > 0
          },
          30_000,
          `a statement like ${pattern} to wait`,
        )
      try {
        await writePublishedEvents(t.db, agency, 10)
        await waitFor(() => held.length >= 5, 30_000, 'deliveries under way')
        const blocker = other.db
          .transaction(async (tx) => {
            await tx.execute(sql`select id from webhook_subscriptions where id = ${subscription.id}::int for update`)
            holding()
            await released
            tx.rollback()
          })
          .catch(() => {})
        await rowHeld
        const deletion = t.app.inject({ method: 'DELETE', url: `/webhooks/${subscription.id}`, headers: agency.headers })
        await waitingOnALock('delete from "webhook_subscriptions"%')
        // The attempts end now and the worker records them while the deletion waits.
        for (const response of held.splice(0)) response.writeHead(200).end()
        await waitingOnALock('%json_to_recordset%')
        release()
        await blocker
        const deleted = await deletion
        assert.equal(deleted.statusCode, 204, deleted.body)
      } finally {
        release()
        for (const response of held.splice(0)) response.writeHead(200).end()
        await worker.stop()
      }
      assert.deepEqual(
        lines.filter((line) => /40P01|deadlock/i.test(JSON.stringify(line))).map((line) => line.msg),
        [],
      )
      const [left] = await queryRows<{ n: number }>(
        t.db,
        sql`select count(*)::int as n from webhook_deliveries where subscription_id = ${subscription.id}::int`,
      )
      assert.equal(left!.n, 0, 'its deliveries went with it')
    },
  )

  it('does not count the days its agency was suspended as days of failures', async () => {
    const agency = await newAgency()
    const hook = await receiver(() => ({ status: 500 }))
    const subscription = await subscribe(t.app, agency, { url: hook.url, events: ['property.published'] })
    const suspended = await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/suspend`, headers: adminHeaders })
    assert.equal(suspended.statusCode, 200, suspended.body)
    // As if the receiver had failed for a day when the agency was suspended, six days ago.
    await t.db.execute(sql`update tenants set suspended_at = now() - interval '6 days' where id = ${agency.tenantId}::int`)
    await t.db.execute(sql`update webhook_subscriptions set failing_since = now() - interval '7 days' where id = ${subscription.id}::int`)
    const unsuspended = await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/unsuspend`, headers: adminHeaders })
    assert.equal(unsuspended.statusCode, 200, unsuspended.body)
    await writePublishedEvents(t.db, agency, 1)
    const worker = startWebhookWorker(t.database.handle, t.config)
    try {
      await waitFor(async () => (await deliveryLog(t.app, agency, subscription.id)).total >= 1, 30_000, 'the first attempt after the suspension')
    } finally {
      await worker.stop()
    }
    // A day of failures while deliverable, and one failed attempt: far from 5 days without a success.
    const shown = (await t.app.inject({ url: `/webhooks/${subscription.id}`, headers: agency.headers })).json<WebhookSubscription>()
    assert.equal(shown.is_active, true, `switched off: ${shown.disabled_reason}`)
    const [row] = await queryRows<{ days: number }>(
      t.db,
      sql`select extract(epoch from now() - failing_since) / 86400 as days from webhook_subscriptions where id = ${subscription.id}::int`,
    )
    assert.ok(row!.days > 0.9 && row!.days < 1.1, `failing for ${row!.days} days`)
  })
})
