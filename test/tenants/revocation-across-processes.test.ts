import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import type { CreatedApiKey, RegistrationStatus } from '../../src/modules/tenants/tenants.schemas.js'
import { KEY_REVOCATIONS_CHANNEL } from '../../src/modules/tenants/tenants.service.js'
import { ADMIN_KEY } from '../helpers/app.js'
import { engine, freshDatabase, type FreshDatabase } from '../helpers/database.js'
import type { RegistrationCreated } from '../helpers/responses.js'
import { startApiProcess, type ApiProcess } from '../helpers/service-process.js'
import { waitFor } from '../helpers/webhooks.js'

/**
 * Two API processes on one PostgreSQL, each caching the keys it has seen: a key revoked, or an
 * agency suspended, through one process must be refused by the other within a second, not when
 * its cache would have forgotten the key (10 s). Also after the processes' listening
 * connections were cut, as a database restart would cut them.
 */
const skip = engine === 'pglite' ? 'needs PostgreSQL (DATABASE_URL): PGlite lives inside one process, so there is no second one to tell' : false

/** The promise: refused on every API process within this long. */
const TAKES_EFFECT_WITHIN_MS = 1000

describe('revocation and suspension across API processes', { skip }, () => {
  let database: FreshDatabase
  let dataDir: string
  let first: ApiProcess
  let second: ApiProcess

  before(async () => {
    database = await freshDatabase()
    dataDir = mkdtempSync(path.join(tmpdir(), 'mls-revocation-'))
    const env = {
      DATABASE_URL: database.url!,
      // Few connections each: the PostgreSQL is shared with other tests.
      DATABASE_POOL_SIZE: '3',
      DATA_DIR: dataDir,
      SECRET_KEY: `revocation-secret-${randomBytes(16).toString('hex')}`,
      ADMIN_API_KEY: ADMIN_KEY,
      LOG_LEVEL: 'warn',
    }
    ;[first, second] = await Promise.all([startApiProcess('api-1', env), startApiProcess('api-2', env)])
  })
  after(async () => {
    await Promise.all([first?.stop(), second?.stop()])
    await database?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  async function call(api: ApiProcess, method: string, url: string, headers: Record<string, string>, body?: object) {
    const response = await fetch(`${api.baseUrl}${url}`, {
      method,
      headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    })
    return { status: response.status, body: await response.text() }
  }
  const admin = { 'x-admin-key': ADMIN_KEY }
  const statusWith = async (api: ApiProcess, key: string) => (await call(api, 'GET', '/tenants/me', { 'x-api-key': key })).status

  async function createAgency(): Promise<{ tenantId: number; apiKey: string }> {
    const registered = await call(
      first,
      'POST',
      '/tenants/register',
      {},
      { company_name: 'Два процесса', email: `agency-${randomBytes(4).toString('hex')}@example.com` },
    )
    assert.equal(registered.status, 201, registered.body)
    const code = (JSON.parse(registered.body) as RegistrationCreated).request_code
    const approved = await call(first, 'POST', `/admin/registrations/${code}/approve`, admin)
    assert.equal(approved.status, 200, approved.body)
    const status = JSON.parse(approved.body) as RegistrationStatus
    assert.ok(status.status === 'approved' && status.api_key)
    return { tenantId: status.tenant_id, apiKey: status.api_key }
  }
  async function createKey(api: ApiProcess, apiKey: string): Promise<CreatedApiKey> {
    const created = await call(api, 'POST', '/tenants/me/api-keys', { 'x-api-key': apiKey }, {})
    assert.equal(created.status, 201, created.body)
    return JSON.parse(created.body) as CreatedApiKey
  }
  /** Both processes accept the key: each has it in its cache from here on. */
  async function acceptedByBoth(key: string): Promise<void> {
    assert.deepEqual([await statusWith(first, key), await statusWith(second, key)], [200, 200])
  }
  async function refusedWithinASecond(api: ApiProcess, key: string, what: string): Promise<void> {
    await waitFor(async () => (await statusWith(api, key)) === 401, TAKES_EFFECT_WITHIN_MS, `${api.name} to refuse ${what}`)
  }

  it('refuses a key revoked through the other process within a second', async () => {
    const agency = await createAgency()
    const spare = await createKey(first, agency.apiKey)
    await acceptedByBoth(spare.key)

    const revoked = await call(first, 'DELETE', `/tenants/me/api-keys/${spare.id}`, { 'x-api-key': agency.apiKey })
    assert.equal(revoked.status, 204, revoked.body)
    await refusedWithinASecond(second, spare.key, 'the revoked key')
    assert.equal(await statusWith(second, agency.apiKey), 200)
  })

  it('refuses a suspended agency’s keys through the other process within a second', async () => {
    const agency = await createAgency()
    await acceptedByBoth(agency.apiKey)

    const suspended = await call(second, 'POST', `/admin/tenants/${agency.tenantId}/suspend`, admin)
    assert.equal(suspended.status, 200, suspended.body)
    await refusedWithinASecond(first, agency.apiKey, 'the suspended agency’s key')

    assert.equal((await call(first, 'POST', `/admin/tenants/${agency.tenantId}/unsuspend`, admin)).status, 200)
    await acceptedByBoth(agency.apiKey)
  })

  it('keeps listening after its connection is cut, as by a database restart', async () => {
    const agency = await createAgency()
    const spare = await createKey(second, agency.apiKey)
    const listeners = () =>
      queryRows<{ pid: number }>(
        database.handle.db,
        sql`select pid from pg_stat_activity where datname = current_database() and query = ${`LISTEN "${KEY_REVOCATIONS_CHANNEL}"`}`,
      )
    const cut = (await listeners()).map((row) => row.pid)
    assert.equal(cut.length, 2, 'each API process listens on a connection of its own')
    await queryRows(database.handle.db, sql`select pg_terminate_backend(pid) from pg_stat_activity where pid = any(${`{${cut.join(',')}}`}::int[])`)

    // Both listen again, on new connections, and neither process ended.
    await waitFor(
      async () => {
        const pids = (await listeners()).map((row) => row.pid)
        return pids.length === 2 && pids.every((pid) => !cut.includes(pid))
      },
      30_000,
      'both processes to listen again',
    )
    assert.ok(first.alive() && second.alive(), `${first.recentOutput()}\n${second.recentOutput()}`)

    await acceptedByBoth(spare.key)
    const revoked = await call(second, 'DELETE', `/tenants/me/api-keys/${spare.id}`, { 'x-api-key': agency.apiKey })
    assert.equal(revoked.status, 204, revoked.body)
    await refusedWithinASecond(first, spare.key, 'the revoked key after reconnecting')
  })
})
