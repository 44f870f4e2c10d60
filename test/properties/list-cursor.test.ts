import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { PropertyPage, ValidationErrorBody } from '../helpers/responses.js'

/**
 * GET /properties by cursor: the agency's listings newest first, page after page from
 * `next_cursor`, exactly as a plain query orders them (ties in time by id), unmoved by listings
 * submitted meanwhile; a cursor is bound to its filters, and another agency's cursor shows the
 * caller only its own listings.
 */
describe('the tenant’s list by cursor', () => {
  let t: TestApp
  let agency: Tenant
  let other: Tenant

  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app)
    other = await createTenant(t.app, { email: 'other@agency.example' })
    for (let n = 0; n < 6; n++) await submitProperty(t.app, agency, { deal_type: n % 2 === 0 ? 'Продажа' : 'Долгосрочная аренда', location: { city_id: 1 } })
    await runInternalCheck(t.app)
    for (let n = 0; n < 5; n++) await submitProperty(t.app, agency, { location: { city_id: 2 } })
    for (let n = 0; n < 4; n++) await submitProperty(t.app, other, { location: { city_id: 1 } })
    // Ties in creation time, to the microsecond, in pairs: the id decides.
    await t.db.execute(sql`update properties set created_at = timestamptz '2026-03-01 12:00:00.654321+00' + make_interval(mins => id / 2)`)
  })
  after(() => t.close())

  const list = async (query: string, tenant: Tenant = agency): Promise<PropertyPage> => {
    const response = await t.app.inject({ url: `/properties?${query}`, headers: tenant.headers })
    assert.equal(response.statusCode, 200, `${query}: ${response.body}`)
    return response.json<PropertyPage>()
  }

  async function expectedIds(tenant: Tenant, where = sql`true`): Promise<number[]> {
    const rows = await queryRows<{ id: number }>(
      t.db,
      sql`select id from properties where tenant_id = ${tenant.tenantId} and ${where} order by created_at desc, id desc`,
    )
    return rows.map((row) => row.id)
  }

  async function walk(query: string, limit: number, between?: () => Promise<void>): Promise<number[]> {
    const ids: number[] = []
    let page = await list(`${query}&limit=${limit}`)
    for (;;) {
      assert.equal(page.offset, 0)
      ids.push(...page.items.map((item) => item.id))
      if (page.next_cursor === null) return ids
      assert.equal(page.items.length, limit)
      await between?.()
      page = await list(`${query}&limit=${limit}&cursor=${page.next_cursor}`)
    }
  }

  it('walks every listing, and a filtered list, exactly as a plain query orders them', async () => {
    for (const limit of [1, 2, 4, 100]) {
      assert.deepEqual(await walk('', limit), await expectedIds(agency))
      assert.deepEqual(await walk('city_id=1&status_id=2', limit), await expectedIds(agency, sql`city_id = 1 and status_id = 2`))
      assert.deepEqual(await walk('deal_type=%D0%9F%D1%80%D0%BE%D0%B4%D0%B0%D0%B6%D0%B0', limit), await expectedIds(agency, sql`deal_type_id = 1`))
    }
  })

  it('keeps the total of the filters on every page', async () => {
    const first = await list('limit=3&city_id=2')
    const second = await list(`limit=3&city_id=2&cursor=${first.next_cursor}`)
    assert.equal(first.total, 5)
    assert.equal(second.total, 5)
    assert.equal(second.items.length, 2)
    assert.equal(second.next_cursor, null)
  })

  it('neither shifts nor repeats listings when new ones are submitted between pages', async () => {
    const before = await expectedIds(agency)
    const seen = await walk('', 3, async () => {
      await submitProperty(t.app, agency, { location: { city_id: 1 } })
    })
    assert.deepEqual(seen, before)
  })

  it('shows another agency’s cursor nothing of that agency', async () => {
    const theirs = await list('limit=1', other)
    const mine = await list(`limit=100&cursor=${theirs.next_cursor}`)
    const own = new Set(await expectedIds(agency))
    assert.ok(mine.items.every((item) => own.has(item.id)))
    const theirIds = new Set(await expectedIds(other))
    assert.ok(mine.items.every((item) => !theirIds.has(item.id)))
  })

  it('refuses a cursor of other filters, a malformed one, or one with an offset (422 naming cursor)', async () => {
    const cursor = (await list('limit=1&city_id=1')).next_cursor!
    for (const query of [
      `cursor=${cursor}`,
      `city_id=2&cursor=${cursor}`,
      `city_id=1&status_id=2&cursor=${cursor}`,
      `city_id=1&offset=1&cursor=${cursor}`,
      'cursor=abc',
      'cursor=a.b',
      `cursor=${Buffer.from(JSON.stringify({ s: 'created_desc', f: 'x', k: ['2026-01-01T00:00:00Z', 1] })).toString('base64url')}`,
    ]) {
      const response = await t.app.inject({ url: `/properties?${query}`, headers: agency.headers })
      assert.equal(response.statusCode, 422, `${query}: ${response.body}`)
      assert.match(response.json<ValidationErrorBody>().detail, /cursor/, query)
    }
  })

  it('keeps a new listing’s creation time to the millisecond it shows, so equal times shown are listed by id', async () => {
    const fresh = await createTenant(t.app, { email: 'milliseconds@agency.example' })
    const ids = await Promise.all([0, 1, 2, 3].map(async () => (await submitProperty(t.app, fresh)).id))
    const rows = await queryRows<{ id: number; sub_millisecond: number }>(
      t.db,
      sql`select id, (extract(microseconds from created_at)::int % 1000) as sub_millisecond from properties where id in (${sql.join(ids, sql`, `)})`,
    )
    assert.deepEqual(
      rows.map((row) => Number(row.sub_millisecond)),
      [0, 0, 0, 0],
    )
    const { items } = (await t.app.inject({ url: '/properties?limit=10', headers: fresh.headers })).json<PropertyPage>()
    for (let index = 1; index < items.length; index++) {
      const [newer, older] = [items[index - 1]!, items[index]!]
      const [newerAt, olderAt] = [Date.parse(newer.created_at), Date.parse(older.created_at)]
      assert.ok(newerAt > olderAt || (newerAt === olderAt && newer.id > older.id), `${newer.id} (${newer.created_at}) before ${older.id} (${older.created_at})`)
    }
  })

  it('needs a key, as the list always does', async () => {
    const cursor = (await list('limit=1')).next_cursor!
    const response = await t.app.inject({ url: `/properties?cursor=${cursor}` })
    assert.equal(response.statusCode, 401)
  })
})
