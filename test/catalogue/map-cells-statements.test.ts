import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders, createTenant, submitProperty } from '../helpers/factories.js'
import { assertMapCountsAsRebuilt, templateColumns } from '../helpers/map-counts.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { CataloguePage } from '../helpers/responses.js'

/**
 * catalogue_counts_by_cell and catalogue_counts_by_cell_price (migrations 0026 to 0028) through statements that change many listings
 * at once: a row trigger runs after its whole statement has changed the table, so a cell's box
 * read again by one row's trigger already lacks the rows the statement changed after it.
 */
describe('the map’s counted cells, under statements of many listings', () => {
  let t: TestApp
  let templateId: number

  /** Published copies of the template at these coordinates, through the triggers as any listing; their ids. */
  async function copies(points: [lat: number, lon: number][]): Promise<number[]> {
    const columns = await templateColumns(t.db, ['latitude', 'longitude'])
    const rows = points.map(([lat, lon]) => sql`(${lat}::numeric, ${lon}::numeric)`)
    const inserted = await queryRows<{ id: number }>(
      t.db,
      sql`insert into properties (${sql.join(columns, sql`, `)}, latitude, longitude)
          select ${sql.join(
            columns.map((column) => sql`p.${column}`),
            sql`, `,
          )}, v.latitude, v.longitude
          from properties p, (values ${sql.join(rows, sql`, `)}) as v (latitude, longitude)
          where p.id = ${templateId}
          returning id`,
    )
    return inserted.map((row) => row.id)
  }

  const cellsAsRebuilt = () => assertMapCountsAsRebuilt(t.db)

  before(async () => {
    t = await buildTestApp()
    const agency = await createTenant(t.app)
    const template = await submitProperty(t.app, agency, {
      location: { city_id: 1, address: 'ул. Обзорная, д. 1', latitude: 55.6, longitude: 37.3 },
    })
    await runInternalCheck(t.app)
    templateId = template.id
  })
  after(() => t.close())

  it('suspends an agency whose published listings share a counted cell (one statement withdraws them all)', async () => {
    const agency = await createTenant(t.app)
    const location = { city_id: 1, address: 'ул. Соседняя, д. 2', latitude: 55.75, longitude: 37.62 }
    await submitProperty(t.app, agency, { location })
    await submitProperty(t.app, agency, { location: { ...location, address: 'ул. Соседняя, д. 3', latitude: 55.751 } })
    await runInternalCheck(t.app)
    const box = 'bbox=37.61,55.74,37.63,55.76'
    const before = await t.app.inject(`/mls/properties?${box}&tenant_id=${agency.tenantId}&limit=1`)
    assert.equal(before.json<CataloguePage>().total, 2, before.body)

    // holdPublishedListings: one UPDATE of both rows. The first row's trigger takes it from its
    // cell (2 → 1), finds it on the cell's box and reads the box again from the table, where the
    // second row is already withdrawn too: min/max of nothing, NULL into a NOT NULL column.
    const suspended = await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/suspend`, headers: adminHeaders })
    assert.equal(suspended.statusCode, 200, suspended.body)
    const after = await t.app.inject(`/mls/properties?${box}&tenant_id=${agency.tenantId}&limit=1`)
    assert.equal(after.json<CataloguePage>().total, 0, after.body)
    await cellsAsRebuilt()
  })

  it('deletes, in one statement, every listing of a counted cell', async () => {
    const ids = await copies([
      [-10.3, -20.3],
      [-10.301, -20.301],
    ])
    await t.db.execute(sql`delete from properties where id in (${sql.join(ids, sql`, `)})`)
    await cellsAsRebuilt()
  })

  it('withdraws, in one statement, the listings on the edges of a cell’s box, leaving the box of the one left', async () => {
    const ids = await copies([
      [-30.3001, -40.3001],
      [-30.3009, -40.3009],
      [-30.3005, -40.3005],
    ])
    await t.db.execute(sql`update properties set status_id = 4 where id in (${ids[0]!}, ${ids[1]!})`)
    for (const table of ['catalogue_counts_by_cell', 'catalogue_counts_by_cell_price']) {
      const [cell] = await queryRows<{ south: number; north: number; west: number; east: number }>(
        t.db,
        sql`select south, north, west, east from ${sql.identifier(table)} where south < -30.2 and south > -30.4`,
      )
      assert.deepEqual(cell, { south: -30.3005, north: -30.3005, west: -40.3005, east: -40.3005 }, table)
    }
    await cellsAsRebuilt()
  })

  it('moves listings between two price bands both ways in one statement', async () => {
    const [first, second] = await copies([
      [-50.01, -60.01],
      [-50.02, -60.02],
    ])
    await t.db.execute(sql`update properties set price = case id when ${first!} then 1250000 else 8730000 end where id in (${first!}, ${second!})`)
    await t.db.execute(sql`update properties set price = 9990000 - price where id in (${first!}, ${second!})`)
    await cellsAsRebuilt()
  })

  it('moves listings between two cells both ways in one statement', async () => {
    const [first, second] = await copies([
      [20.01, 30.01],
      [20.11, 30.11],
    ])
    await t.db.execute(sql`update properties set latitude = 40.12 - latitude, longitude = 60.12 - longitude where id in (${first!}, ${second!})`)
    await cellsAsRebuilt()
  })

  it('withdraws, in one statement, every listing of a counted cell, some elsewhere too', async () => {
    const ids = await copies([
      [-0.0001, 0.0001],
      [-0.0002, 0.0002],
      [-0.0003, 0.0003],
      [1.5, 1.5],
    ])
    await t.db.execute(sql`update properties set status_id = 4 where id in (${sql.join(ids, sql`, `)})`)
    await cellsAsRebuilt()
  })
})
