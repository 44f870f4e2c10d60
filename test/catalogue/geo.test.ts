import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import type { CatalogueDetail, MapClusters } from '../../src/modules/catalogue/catalogue.schemas.js'
import { cellDegrees, distanceMetres } from '../../src/modules/catalogue/geo.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { CataloguePage, ValidationErrorBody } from '../helpers/responses.js'

/** What a test listing was given, to find its matches by brute force. */
interface Listing {
  id: number
  cityId: number
  deal: 1 | 2
  rooms: number
  price: number
  lat: number | null
  lon: number | null
}

/**
 * Map searches and clusters, each compared with a brute-force pass over the listings created
 * here: a grid of Moscow listings 0.01° apart (so box edges fall exactly on some), a few in
 * Saint Petersburg and some without coordinates.
 */
describe('the catalogue on the map', () => {
  let t: TestApp
  let agency: Tenant
  const listings: Listing[] = []

  async function addListing(cityId: number, lat: number | null, lon: number | null, index: number): Promise<Listing> {
    const deal = index % 3 === 0 ? 2 : 1
    const rooms = 1 + (index % 3)
    const price = deal === 2 ? 50_000 + index * 1000 : 5_000_000 + index * 100_000
    const property = await submitProperty(t.app, agency, {
      price,
      deal_type: deal === 2 ? 'Долгосрочная аренда' : 'Продажа',
      location: { city_id: cityId, address: `ул. Картографическая, д. ${index + 1}`, latitude: lat, longitude: lon },
      attributes: { area: '50', rooms: String(rooms) },
    })
    const listing = { id: property.id, cityId, deal, rooms, price, lat, lon } satisfies Listing
    listings.push(listing)
    return listing
  }

  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app)
    let index = 0
    for (let row = 0; row < 6; row++) {
      for (let column = 0; column < 6; column++) {
        await addListing(1, Number((55.7 + row * 0.01).toFixed(6)), Number((37.55 + column * 0.01).toFixed(6)), index++)
      }
    }
    for (let i = 0; i < 4; i++) await addListing(2, Number((59.93 + i * 0.005).toFixed(6)), Number((30.31 + i * 0.007).toFixed(6)), index++)
    for (let i = 0; i < 3; i++) await addListing(1, null, null, index++)
    await runInternalCheck(t.app)
    const [published] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from properties where status_id = 2`)
    assert.equal(published!.n, listings.length)
  })
  after(() => t.close())

  const located = () => listings.filter((listing) => listing.lat !== null && listing.lon !== null) as (Listing & { lat: number; lon: number })[]
  const inBox = (listing: Listing, [west, south, east, north]: number[]) =>
    listing.lat !== null && listing.lon !== null && listing.lon >= west! && listing.lon <= east! && listing.lat >= south! && listing.lat <= north!

  async function search(query: string): Promise<CataloguePage> {
    const response = await t.app.inject(`/mls/properties?${query.includes('limit=') ? '' : 'limit=100&'}${query}`)
    assert.equal(response.statusCode, 200, response.body)
    return response.json<CataloguePage>()
  }

  const sortedIds = (ids: number[]) => [...ids].sort((a, b) => a - b)

  it('keeps the listings in a bbox, edges included, with or without other filters', async () => {
    const boxes = [
      [37.55, 55.7, 37.6, 55.75], // the grid's corner to its opposite: every edge on listings
      [37.57, 55.72, 37.59, 55.74],
      [37.565, 55.705, 37.585, 55.725],
      [30, 59, 31, 60],
      [-180, -90, 180, 90],
      [0, 0, 1, 1],
    ]
    const others: [string, (listing: Listing) => boolean][] = [
      ['', () => true],
      ['&deal_type_id=1', (listing) => listing.deal === 1],
      ['&rooms=2&city_id=1', (listing) => listing.rooms === 2 && listing.cityId === 1],
      ['&min_price=5500000&deal_type_id=1', (listing) => listing.deal === 1 && listing.price >= 5_500_000],
      ['&max_price=6000000', (listing) => listing.price <= 6_000_000],
      ['&city_id=2', (listing) => listing.cityId === 2],
    ]
    for (const box of boxes) {
      for (const [filter, keeps] of others) {
        const expected = listings.filter((listing) => inBox(listing, box) && keeps(listing))
        for (const sort of ['created_desc', 'price_asc', 'price_desc']) {
          const page = await search(`bbox=${box.join(',')}${filter}&sort=${sort}`)
          assert.equal(page.total, expected.length, `total of bbox=${box.join()} ${filter}`)
          assert.deepEqual(sortedIds(page.items.map((item) => item.id)), sortedIds(expected.map((listing) => listing.id)), `bbox=${box.join()} ${filter}`)
        }
      }
    }
  })

  it('keeps a box and a price range whichever of them finds the matches', async () => {
    // A wide price range in a narrow box is found on the map's index; a narrow range in a box
    // of many listings on a price index: here the grid's sale prices from 5 to 7 M lie in its
    // four southern rows, and the boxes cut through them on every side.
    const cases: [number[], string, (listing: Listing) => boolean][] = [
      [[37.55, 55.72, 37.6, 55.75], '&min_price=5000000&max_price=7000000', (listing) => listing.deal === 1 && listing.price <= 7_000_000],
      [[37.565, 55.705, 37.6, 55.75], '&max_price=6800000&deal_type_id=1', (listing) => listing.deal === 1 && listing.price <= 6_800_000],
      [[37.55, 55.7, 37.585, 55.725], '&min_price=5600000&max_price=5900000', (listing) => listing.price >= 5_600_000 && listing.price <= 5_900_000],
      [[37.57, 55.72, 37.58, 55.73], '&min_price=1', () => true],
    ]
    for (const [box, filter, keeps] of cases) {
      const expected = listings.filter((listing) => inBox(listing, box) && keeps(listing))
      for (const sort of ['created_desc', 'price_asc']) {
        const page = await search(`bbox=${box.join(',')}${filter}&sort=${sort}`)
        assert.equal(page.total, expected.length, `total of bbox=${box.join()} ${filter}`)
        assert.deepEqual(sortedIds(page.items.map((item) => item.id)), sortedIds(expected.map((listing) => listing.id)), `bbox=${box.join()} ${filter}`)
      }
      const answer = await t.app.inject(`/mls/clusters?bbox=${box.join(',')}&zoom=14${filter}`)
      assert.equal(answer.json<MapClusters>().total, expected.length, `clusters of bbox=${box.join()} ${filter}`)
    }
  })

  it('pages a bbox search in order, whichever way the page is read', async () => {
    // Small pages of a large share of the listings are walked; a narrow box is read as a range.
    for (const box of ['37.55,55.7,37.6,55.75', '37.57,55.72,37.58,55.73']) {
      const all = (await search(`bbox=${box}`)).items.map((item) => item.id)
      const byPrice = (await search(`bbox=${box}&sort=price_asc`)).items
      for (let i = 1; i < byPrice.length; i++) assert.ok(byPrice[i - 1]!.price! <= byPrice[i]!.price!)
      const paged: number[] = []
      for (let offset = 0; offset < all.length + 3; offset += 3) {
        const page = await search(`bbox=${box}&limit=3&offset=${offset}`)
        paged.push(...page.items.map((item) => item.id))
      }
      assert.deepEqual(paged, all)
      // Newest first: the listings were created in order of id.
      assert.deepEqual(
        all,
        [...all].sort((a, b) => b - a),
      )
    }
  })

  it('keeps the listings within radius_m of near, nearest first with sort=distance', async () => {
    const centre = { lat: 55.7234, lon: 37.5712 }
    for (const radius of [100, 1500.5, 2600, 100_000]) {
      const expected = located()
        .map((listing) => ({ listing, metres: distanceMetres(centre.lat, centre.lon, listing.lat, listing.lon) }))
        .filter(({ metres }) => metres <= radius)
        .sort((a, b) => a.metres - b.metres || a.listing.id - b.listing.id)
      const page = await search(`near=${centre.lat},${centre.lon}&radius_m=${radius}&sort=distance`)
      assert.equal(page.total, expected.length, `radius ${radius}`)
      assert.deepEqual(
        page.items.map((item) => item.id),
        expected.map(({ listing }) => listing.id),
        `radius ${radius}`,
      )
      const unsorted = await search(`near=${centre.lat},${centre.lon}&radius_m=${radius}&deal_type_id=1`)
      assert.deepEqual(
        sortedIds(unsorted.items.map((item) => item.id)),
        sortedIds(expected.filter(({ listing }) => listing.deal === 1).map(({ listing }) => listing.id)),
      )
    }
    // With a bbox too: a match is in both.
    const box = [37.56, 55.7, 37.6, 55.72]
    const both = located().filter((listing) => inBox(listing, box) && distanceMetres(centre.lat, centre.lon, listing.lat, listing.lon) <= 2600)
    const page = await search(`near=${centre.lat},${centre.lon}&radius_m=2600&bbox=${box.join(',')}&sort=distance&limit=3&offset=2`)
    assert.equal(page.total, both.length)
    const nearest = both.sort(
      (a, b) => distanceMetres(centre.lat, centre.lon, a.lat, a.lon) - distanceMetres(centre.lat, centre.lon, b.lat, b.lon) || a.id - b.id,
    )
    assert.deepEqual(
      page.items.map((item) => item.id),
      nearest.slice(2, 5).map((listing) => listing.id),
    )
    // A box and a circle that do not meet: nothing.
    assert.equal((await search(`near=${centre.lat},${centre.lon}&radius_m=100&bbox=30,59,31,60`)).total, 0)
  })

  it('never matches a listing without coordinates, and shows every listing’s coordinates', async () => {
    const world = await search('bbox=-180,-90,180,90')
    assert.equal(world.total, located().length)
    const all = await search('')
    assert.equal(all.total, listings.length)
    for (const item of all.items) {
      const listing = listings.find((candidate) => candidate.id === item.id)!
      assert.equal(item.latitude, listing.lat)
      assert.equal(item.longitude, listing.lon)
    }
    const listing = located()[7]!
    const detail = (await t.app.inject(`/mls/properties/${listing.id}`)).json<CatalogueDetail>()
    assert.deepEqual([detail.latitude, detail.longitude], [listing.lat, listing.lon])
  })

  it('shows a listing published after a bbox search was answered', async () => {
    const box = '37.7,55.8,37.71,55.81'
    assert.equal((await search(`bbox=${box}`)).total, 0)
    const listing = await addListing(1, 55.805, 37.705, 100)
    await runInternalCheck(t.app)
    const page = await search(`bbox=${box}`)
    assert.deepEqual(
      page.items.map((item) => item.id),
      [listing.id],
    )
  })

  it('answers 422 naming the parameter for a bad map filter', async () => {
    const cases: [string, string][] = [
      ['bbox=1,2,3', 'bbox'],
      ['bbox=a,b,c,d', 'bbox'],
      ['bbox=1,2,3,4,5', 'bbox'],
      ['bbox=1,,3,4', 'bbox'],
      ['bbox=Infinity,0,1,1', 'bbox'],
      // Written as every query number must be (docs/api.md#input): no sign but a minus, no blanks, digits before a point.
      ['bbox=%2B37,55,38,56', 'bbox'],
      ['bbox=%2037,55,38,56', 'bbox'],
      ['bbox=37,55,38,.56', 'bbox'],
      ['bbox=37,55,38.,56', 'bbox'],
      ['near=%2B55.7,37.6&radius_m=1000', 'near'],
      ['near=55.7,%2037.6&radius_m=1000', 'near'],
      ['bbox=-181,0,1,1', 'bbox'],
      ['bbox=0,-91,1,1', 'bbox'],
      ['bbox=0,0,181,1', 'bbox'],
      ['bbox=0,0,1,91', 'bbox'],
      ['bbox=2,0,1,1', 'bbox'],
      ['bbox=1,0,1,1', 'bbox'],
      ['bbox=0,1,1,1', 'bbox'],
      ['near=55.7', 'near'],
      ['near=91,37&radius_m=10', 'near'],
      ['near=55,181&radius_m=10', 'near'],
      ['near=55.7,37.6', 'radius_m'],
      ['near=55.7,37.6&radius_m=0', 'radius_m'],
      ['near=55.7,37.6&radius_m=100001', 'radius_m'],
      ['radius_m=100', 'radius_m'],
      ['sort=distance', 'sort'],
      ['sort=distance&bbox=0,0,1,1', 'sort'],
    ]
    for (const [query, parameter] of cases) {
      const response = await t.app.inject(`/mls/properties?${query}`)
      assert.equal(response.statusCode, 422, `${query}: ${response.body}`)
      assert.match(response.json<ValidationErrorBody>().detail, new RegExp(parameter), query)
    }
  })

  describe('clusters', () => {
    async function clusters(query: string): Promise<MapClusters> {
      const response = await t.app.inject(`/mls/clusters?${query}`)
      assert.equal(response.statusCode, 200, response.body)
      return response.json<MapClusters>()
    }

    it('groups the matches by the cells of the zoom, with exact counts, means and boxes', async () => {
      const box = [37.5, 55.65, 37.65, 55.8]
      for (const [zoom, filter, keeps] of [
        [10, '', () => true],
        [12, '', () => true],
        [14, '', () => true],
        [13, '&deal_type_id=1&rooms=2', (listing: Listing) => listing.deal === 1 && listing.rooms === 2],
      ] as [number, string, (listing: Listing) => boolean][]) {
        const cell = cellDegrees(zoom)
        const expected = new Map<string, (Listing & { lat: number; lon: number })[]>()
        for (const listing of located().filter((listing) => inBox(listing, box) && keeps(listing))) {
          const key = `${Math.floor(listing.lat / cell)}:${Math.floor(listing.lon / cell)}`
          expected.set(key, [...(expected.get(key) ?? []), listing])
        }
        const answer = await clusters(`bbox=${box.join(',')}&zoom=${zoom}${filter}`)
        assert.equal(answer.clusters.length, expected.size, `zoom ${zoom}`)
        assert.equal(
          answer.total,
          [...expected.values()].reduce((sum, members) => sum + members.length, 0),
        )
        assert.equal(
          answer.clusters.reduce((sum, cluster) => sum + cluster.count, 0),
          answer.total,
        )
        for (const cluster of answer.clusters) {
          const members = expected.get(`${Math.floor(cluster.bbox[1]! / cell)}:${Math.floor(cluster.bbox[0]! / cell)}`)
          assert.ok(members, `a cluster at ${cluster.bbox.join()}`)
          assert.equal(cluster.count, members.length)
          const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length
          assert.ok(Math.abs(cluster.lat - mean(members.map((member) => member.lat))) < 1e-6)
          assert.ok(Math.abs(cluster.lon - mean(members.map((member) => member.lon))) < 1e-6)
          assert.deepEqual(cluster.bbox, [
            Math.min(...members.map((member) => member.lon)),
            Math.min(...members.map((member) => member.lat)),
            Math.max(...members.map((member) => member.lon)),
            Math.max(...members.map((member) => member.lat)),
          ])
        }
      }
      // The finer the zoom, the more clusters of the same listings.
      const coarse = await clusters(`bbox=${box.join(',')}&zoom=10`)
      const fine = await clusters(`bbox=${box.join(',')}&zoom=14`)
      assert.ok(coarse.clusters.length < fine.clusters.length)
      assert.equal(coarse.total, fine.total)
      assert.equal(coarse.total, (await search(`bbox=${box.join(',')}`)).total)
    })

    it('takes the search’s filters, and has nothing where nothing matches', async () => {
      const answer = await clusters('bbox=37.5,55.65,37.65,55.8&zoom=12&near=55.72,37.57&radius_m=1200&city_id=1')
      assert.equal(answer.total, (await search('near=55.72,37.57&radius_m=1200&city_id=1')).total)
      assert.deepEqual(await clusters('bbox=0,0,1,1&zoom=5'), { clusters: [], total: 0 })
    })

    it('answers 422 naming the parameter for a bad map or zoom', async () => {
      const cases: [string, string][] = [
        ['zoom=10', 'bbox'],
        ['bbox=37,55,38,56', 'zoom'],
        ['bbox=37,55,38,56&zoom=21', 'zoom'],
        ['bbox=37,55,38,56&zoom=-1', 'zoom'],
        ['bbox=37,55,38,56&zoom=1.5', 'zoom'],
        ['bbox=38,55,37,56&zoom=10', 'bbox'],
        // Half the world at street level: too many cells.
        ['bbox=0,0,90,45&zoom=16', 'bbox'],
        ['bbox=37,55,38,56&zoom=10&min_price=10&max_price=5', 'min_price'],
        ['bbox=37,55,38,56&zoom=10&radius_m=5', 'radius_m'],
      ]
      for (const [query, parameter] of cases) {
        const response = await t.app.inject(`/mls/clusters?${query}`)
        assert.equal(response.statusCode, 422, `${query}: ${response.body}`)
        assert.match(response.json<ValidationErrorBody>().detail, new RegExp(parameter), query)
      }
      // Every problem at once: a box too wide for its zoom beside the filters' own.
      for (const [query, named] of [
        ['bbox=0,0,90,45&zoom=16&min_price=10&max_price=5', ['query.min_price', 'query.bbox']],
        ['bbox=0,0,90,45&zoom=16&radius_m=5', ['query.radius_m', 'query.bbox']],
      ] as const) {
        const response = await t.app.inject(`/mls/clusters?${query}`)
        assert.deepEqual(
          response.json<ValidationErrorBody>().errors.map((error) => error.loc.join('.')),
          named,
          query,
        )
      }
    })
  })
})
