import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import type { MapClusters } from '../../src/modules/catalogue/catalogue.schemas.js'
import { cellDegrees, COUNTED_CELL_DEGREES } from '../../src/modules/catalogue/geo.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty } from '../helpers/factories.js'
import { assertMapCountsAsRebuilt, templateColumns } from '../helpers/map-counts.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { CataloguePage } from '../helpers/responses.js'
import { seededRandom } from '../helpers/random.js'

/** A published listing with coordinates, as the database holds it. */
interface Located {
  id: number
  lat: number
  lon: number
  type: number
  deal: number
  rooms: number | null
  price: number | null
}

const round6 = (degrees: number) => Number(degrees.toFixed(6))

/**
 * Map totals and clusters come from the counted cells wholly inside a box plus the listings on
 * its edge (catalogue_counts_by_cell, migration 0026). Compared here with a brute-force pass over
 * the published listings, on five hundred of them spread over seven counted cells each way,
 * some a millionth of a degree from a cell's side, for boxes whose edges fall anywhere, before
 * and after listings leave, move and change, among them those on the edges of their cells' boxes.
 */
describe('map totals and clusters from the counted cells', () => {
  let t: TestApp
  const random = seededRandom(20261126)
  const pick = <T>(values: readonly T[]) => values[Math.floor(random() * values.length)]!
  // Moscow's centre, the counted grid's cells a little over 2 km on a side there.
  const origin = { lat: 55.6, lon: 37.3 }
  const extent = 7 * COUNTED_CELL_DEGREES

  /** Close to a counted cell's side, on either side of it, or anywhere. */
  function coordinate(start: number): number {
    if (random() < 0.2) {
      const side = (Math.floor(start / COUNTED_CELL_DEGREES) + 1 + Math.floor(random() * 6)) * COUNTED_CELL_DEGREES
      return round6(side + pick([-1e-6, 0, 1e-6]))
    }
    return round6(start + random() * extent)
  }

  /** A price of two to seven digits, a fifth of them where a price band starts (catalogue_price_band of migration 0008). */
  function listingPrice(): number {
    const digits = 2 + Math.floor(random() * 6)
    if (random() < 0.2) return (10 + Math.floor(random() * 90)) * 10 ** (digits - 2)
    return 10 ** (digits - 1) + Math.floor(random() * 9 * 10 ** (digits - 1))
  }

  async function published(): Promise<Located[]> {
    return queryRows<Located>(
      t.db,
      sql`select id, latitude::float8 as lat, longitude::float8 as lon, property_type_id as type, deal_type_id as deal, rooms, price::float8 as price
          from properties where status_id = 2 and latitude is not null and longitude is not null`,
    )
  }

  before(async () => {
    t = await buildTestApp()
    const agency = await createTenant(t.app)
    const template = await submitProperty(t.app, agency, {
      location: { city_id: 1, address: 'ул. Сеточная, д. 1', latitude: origin.lat, longitude: origin.lon },
    })
    await runInternalCheck(t.app)
    // Copies of the template, through the triggers as any listing: columns the database fills itself left out.
    const columns = await templateColumns(t.db, ['latitude', 'longitude', 'property_type_id', 'deal_type_id', 'attributes', 'price'])
    // Most of one type, deal and rooms, so that a counted cell's row holds several listings and
    // one leaving its edge has the box read again from those left.
    const rows = Array.from({ length: 500 }, () => {
      const rooms = random() < 0.1 ? null : random() < 0.7 ? 2 : 1 + Math.floor(random() * 4)
      return sql`(${coordinate(origin.lat)}::numeric, ${coordinate(origin.lon)}::numeric, ${random() < 0.8 ? 1 : 2}::smallint, ${random() < 0.8 ? 1 : 2}::smallint,
        ${rooms}::text, ${listingPrice()}::numeric)`
    })
    await t.db.execute(sql`insert into properties (${sql.join(columns, sql`, `)}, latitude, longitude, property_type_id, deal_type_id, attributes, price)
      select ${sql.join(
        columns.map((column) => sql`p.${column}`),
        sql`, `,
      )}, v.latitude, v.longitude, v.type_id, v.deal_id,
             case when v.rooms is null then p.attributes - 'rooms' else jsonb_set(p.attributes, '{rooms}', to_jsonb(v.rooms)) end, v.price
      from properties p, (values ${sql.join(rows, sql`, `)}) as v (latitude, longitude, type_id, deal_id, rooms, price)
      where p.id = ${template.id}`)
  })
  after(() => t.close())

  const filters: [string, (listing: Located) => boolean][] = [
    ['', () => true],
    ['&property_type_id=1', (listing) => listing.type === 1],
    ['&deal_type_id=2', (listing) => listing.deal === 2],
    ['&property_type_id=2&deal_type_id=1', (listing) => listing.type === 2 && listing.deal === 1],
    ['&property_type_id=1&deal_type_id=1&rooms=2', (listing) => listing.type === 1 && listing.deal === 1 && listing.rooms === 2],
    // Counted on the listings: the same answers either way.
    ['&deal_type_id=1&min_price=4000000', (listing) => listing.deal === 1 && listing.price !== null && listing.price >= 4_000_000],
  ]

  /**
   * A price range, with a type and a deal or not (counted on catalogue_counts_by_cell_price): its ends a
   * listing's price, a little under or over one (often in the band next to it), or anywhere;
   * sometimes one end only, sometimes both in one band.
   */
  function pricedFilter(listings: Located[]): [string, (listing: Located) => boolean] {
    // A listing's type and deal; one end at or near its price, the other near another listing's
    // (or its own again: both ends in one band).
    const reference = pick(listings)
    const [type, deal] = [reference.type, reference.deal]
    const near = (price: number | null) => {
      if (price === null) return listingPrice()
      // The width of its band: where the price starts a band, a little less is the band below.
      const width = 10 ** Math.max(String(Math.trunc(price)).length - 2, 0)
      const roll = random()
      if (roll < 0.4) return price
      if (roll < 0.75) return Number((price - pick([0.01, width / 2, width])).toFixed(2))
      return Number((price + pick([0.01, width])).toFixed(2))
    }
    const other = random() < 0.2 ? reference : pick(listings)
    const [min, max] = [near(reference.price), near(other.price)].sort((a, b) => a - b) as [number, number]
    const ends = random() < 0.6 ? 'both' : pick(['min', 'max'])
    // Mostly with the type and the deal, sometimes without either.
    const [withType, withDeal] = [random() < 0.7, random() < 0.8]
    const query =
      (withType ? `&property_type_id=${type}` : '') +
      (withDeal ? `&deal_type_id=${deal}` : '') +
      (ends === 'max' ? '' : `&min_price=${min}`) +
      (ends === 'min' ? '' : `&max_price=${max}`)
    return [
      query,
      (listing) =>
        (!withType || listing.type === type) &&
        (!withDeal || listing.deal === deal) &&
        listing.price !== null &&
        (ends === 'max' || listing.price >= min) &&
        (ends === 'min' || listing.price <= max),
    ]
  }

  /** A box over the listings' area: edges anywhere, or a millionth of a degree from a cell's side. */
  function randomBox(): number[] {
    const [south, north] = [coordinate(origin.lat - 2 * COUNTED_CELL_DEGREES), coordinate(origin.lat - 2 * COUNTED_CELL_DEGREES)].sort((a, b) => a - b)
    const [west, east] = [coordinate(origin.lon - 2 * COUNTED_CELL_DEGREES), coordinate(origin.lon - 2 * COUNTED_CELL_DEGREES)].sort((a, b) => a - b)
    return [west!, south!, east! + 1e-6, north! + 1e-6].map(round6)
  }

  /** A box over all the listings' area, its edges anywhere in the cells around it. */
  function wholeAreaBox(): number[] {
    const margin = () => random() * COUNTED_CELL_DEGREES
    return [origin.lon - margin(), origin.lat - margin(), origin.lon + extent + margin(), origin.lat + extent + margin()].map(round6)
  }

  async function compareWithBruteForce(boxes: number): Promise<number> {
    const listings = await published()
    let clustersCompared = 0
    for (let i = 0; i < boxes; i++) {
      // A price range is narrow among the prices of all magnitudes: its boxes are often all the listings' area.
      const priced = random() < 0.4
      const [west, south, east, north] = (priced && random() < 0.6 ? wholeAreaBox() : randomBox()) as [number, number, number, number]
      const [filter, keeps] = priced ? pricedFilter(listings) : pick(filters)
      const matches = listings.filter((listing) => listing.lat >= south && listing.lat <= north && listing.lon >= west && listing.lon <= east && keeps(listing))
      const bbox = `bbox=${west},${south},${east},${north}`
      const page = await t.app.inject(`/mls/properties?${bbox}${filter}&limit=1`)
      assert.equal(page.statusCode, 200, page.body)
      assert.equal(page.json<CataloguePage>().total, matches.length, `total of ${bbox}${filter}`)

      const zoom = pick([8, 9, 10, 11, 12])
      const answer = await t.app.inject(`/mls/clusters?${bbox}&zoom=${zoom}${filter}`)
      assert.equal(answer.statusCode, 200, answer.body)
      const cell = cellDegrees(zoom)
      const expected = new Map<string, Located[]>()
      for (const listing of matches) {
        const key = `${Math.floor(listing.lat / cell)}:${Math.floor(listing.lon / cell)}`
        expected.set(key, [...(expected.get(key) ?? []), listing])
      }
      const mean = (values: number[]) => Math.round(values.reduce((sum, value) => sum + Math.round(value * 1e6), 0) / values.length) / 1e6
      const want = [...expected.values()].map((members) => ({
        lat: mean(members.map((member) => member.lat)),
        lon: mean(members.map((member) => member.lon)),
        count: members.length,
        bbox: [
          Math.min(...members.map((member) => member.lon)),
          Math.min(...members.map((member) => member.lat)),
          Math.max(...members.map((member) => member.lon)),
          Math.max(...members.map((member) => member.lat)),
        ],
      }))
      const order = (clusters: MapClusters['clusters']) => [...clusters].sort((a, b) => a.bbox[1]! - b.bbox[1]! || a.bbox[0]! - b.bbox[0]!)
      const got = answer.json<MapClusters>()
      assert.equal(got.total, matches.length, `clusters' total of ${bbox}&zoom=${zoom}${filter}`)
      assert.deepEqual(order(got.clusters), order(want), `clusters of ${bbox}&zoom=${zoom}${filter}`)
      clustersCompared += got.clusters.length
    }
    return clustersCompared
  }

  const cellsAsRebuilt = () => assertMapCountsAsRebuilt(t.db, 50)

  it('answers every box as a brute-force pass over the listings would', async () => {
    assert.ok((await compareWithBruteForce(60)) > 100)
    await cellsAsRebuilt()
  })

  it('stays exact as listings leave, move and change, those on the edges of their cells’ boxes among them', async () => {
    // The listings that set each counted cell's box: the first to go.
    const extremes = await queryRows<{ id: number }>(
      t.db,
      sql`select p.id from properties p join catalogue_counts_by_cell c
            on floor(p.latitude::float8 / ${COUNTED_CELL_DEGREES})::int = c.cell_row and floor(p.longitude::float8 / ${COUNTED_CELL_DEGREES})::int = c.cell_column
           and p.property_type_id = c.property_type_id and p.deal_type_id = c.deal_type_id and coalesce(p.rooms, -1) = c.rooms
          where p.status_id = 2 and (p.latitude::float8 in (c.south, c.north) or p.longitude::float8 in (c.west, c.east))
          union
          select p.id from properties p join catalogue_counts_by_cell_price c
            on floor(p.latitude::float8 / ${COUNTED_CELL_DEGREES})::int = c.cell_row and floor(p.longitude::float8 / ${COUNTED_CELL_DEGREES})::int = c.cell_column
           and p.property_type_id = c.property_type_id and p.deal_type_id = c.deal_type_id and catalogue_price_band(p.price) = c.price_band
          where p.status_id = 2 and (p.latitude::float8 in (c.south, c.north) or p.longitude::float8 in (c.west, c.east))
          order by id`,
    )
    assert.ok(extremes.length > 20)
    for (const [index, { id }] of extremes.entries()) {
      switch (index % 7) {
        case 0: // withdrawn
          await t.db.execute(sql`update properties set status_id = 4 where id = ${id}`)
          break
        case 1: // moved a little, within its cell or out of it
          await t.db.execute(sql`update properties set latitude = latitude + 0.003, longitude = longitude - 0.004 where id = ${id}`)
          break
        case 2: // another deal and rooms
          await t.db.execute(sql`update properties set deal_type_id = 3 - deal_type_id, attributes = jsonb_set(attributes, '{rooms}', '"3"') where id = ${id}`)
          break
        case 3: // its coordinates taken away
          await t.db.execute(sql`update properties set latitude = null, longitude = null where id = ${id}`)
          break
        case 4: // deleted
          await t.db.execute(sql`delete from properties where id = ${id}`)
          break
        case 5: // repriced, into another band or within its own
          await t.db.execute(sql`update properties set price = case when id % 2 = 0 then price * 3 else price + 1 end where id = ${id}`)
          break
        case 6: // its price taken away
          await t.db.execute(sql`update properties set price = null where id = ${id}`)
          break
      }
    }
    // Some come back: published again where they are now.
    await t.db.execute(sql`update properties set status_id = 2 where status_id = 4 and id % 2 = 0`)
    await compareWithBruteForce(60)
    await cellsAsRebuilt()
  })
})
