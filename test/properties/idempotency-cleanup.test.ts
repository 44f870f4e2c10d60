import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { idempotencyCleanupJob } from '../../src/modules/properties/idempotency-cleanup.job.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, propertyBody, type Tenant } from '../helpers/factories.js'
import { jobContext, runWhileWorkRemains } from '../helpers/jobs.js'

describe('the idempotency-cleanup job', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app)
  })
  after(() => t.close())

  const submit = (key: string, payload: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: '/properties', headers: { ...agency.headers, 'idempotency-key': key }, payload })

  const storedKeys = async () => (await queryRows<{ key: string }>(t.db, sql`select key from idempotency_keys order by key`)).map((row) => row.key)

  it('forgets keys older than 24 hours and keeps younger ones, which still replay', async () => {
    const expiredBody = propertyBody()
    const freshBody = propertyBody()
    assert.equal((await submit('expired-key', expiredBody)).statusCode, 201)
    const fresh = await submit('fresh-key', freshBody)
    assert.equal(fresh.statusCode, 201)
    await t.db.execute(sql`update idempotency_keys set created_at = now() - interval '24 hours 1 minute' where key = 'expired-key'`)
    await t.db.execute(sql`update idempotency_keys set created_at = now() - interval '23 hours 59 minutes' where key = 'fresh-key'`)

    assert.deepEqual(await runWhileWorkRemains(idempotencyCleanupJob, jobContext(t)), [1])
    assert.deepEqual(await storedKeys(), ['fresh-key'])

    const replayed = await submit('fresh-key', freshBody)
    assert.equal(replayed.statusCode, 201)
    assert.equal(replayed.headers['idempotent-replayed'], 'true')
    assert.equal(replayed.json<Property>().id, fresh.json<Property>().id)
  })

  it('deletes at most 1,000 keys per statement, while expired keys remain', async () => {
    await t.db.execute(sql`
      insert into idempotency_keys (tenant_id, key, request_digest, response_status, response_body, created_at)
      select ${agency.tenantId}::int, 'bulk-' || n, 'digest', 201, '{}', now() - interval '2 days'
      from generate_series(1, 2500) as n`)
    assert.deepEqual(await runWhileWorkRemains(idempotencyCleanupJob, jobContext(t)), [1000, 1000, 500])
    assert.deepEqual(await storedKeys(), ['fresh-key'])
  })
})
