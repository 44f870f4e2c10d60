import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import type { MapClusters } from '../../src/modules/catalogue/catalogue.schemas.js'
import { cellDegrees, distanceMetres, isWithinRadius } from '../../src/modules/catalogue/geo.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { CataloguePage, ValidationErrorBody } from '../helpers/responses.js'
import { templateColumns } from '../helpers/map-counts.js'
import { seededRandom } from '../helpers/random.js'

/**
 * The public catalogue at its edges: combined filters, boxes and circles against a brute-force
 * pass over the stored rows; bad and extreme input (a 422 naming the parameter, never a 5xx);
 * webhook filters validated as the search's; conditional requests; cursors tampered with.
 */
interface Row {
  id: number
  lat: number | null
  lon: number | null
  type: number
  deal: number
  rooms: number | null
  area: number | null
  price: number | null
  district: number | null
  created: string
}

const round6 = (x: number) => Number(x.toFixed(6))

/** A 4xx answer in the `{detail}` shape; a 422 names `loc`. */
function assertRejected(response: { statusCode: number; body: string; json: <T>() => T }, loc: (string | number)[], what: string) {
  assert.ok(response.statusCode >= 400 && response.statusCode < 500, `${what}: ${response.statusCode} ${response.body}`)
  assert.equal(response.statusCode, 422, `${what}: ${response.body}`)
  const body = response.json<ValidationErrorBody>()
  assert.equal(typeof body.detail, 'string', `${what}: ${response.body}`)
  assert.ok(
    body.errors.some((error) => JSON.stringify(error.loc) === JSON.stringify(loc)),
    `${what}: expected an error at ${JSON.stringify(loc)}, got ${response.body}`,
  )
}

describe('the catalogue at its edges', () => {
  let t: TestApp
  let agency: Tenant
  const random = seededRandom(424242)
  const pick = <T>(values: readonly T[]) => values[Math.floor(random() * values.length)]!

  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true' })
    agency = await createTenant(t.app)
    const template = await submitProperty(t.app, agency, {
      location: { city_id: 1, district_id: 1, address: 'ул. Ревизионная, д. 1', latitude: 55.75, longitude: 37.6 },
    })
    await runInternalCheck(t.app)
    const columns = await templateColumns(t.db, [
      'latitude',
      'longitude',
      'property_type_id',
      'deal_type_id',
      'attributes',
      'price',
      'district_id',
      'created_at',
      'status_id',
    ])
    const rows = Array.from({ length: 400 }, (_, i) => {
      let lat: number | null = round6(55.6 + random() * 0.3)
      let lon: number | null = round6(37.3 + random() * 0.5)
      const roll = random()
      if (roll < 0.08) [lat, lon] = [null, null]
      else if (roll < 0.1) [lat, lon] = [round6(-10 + random()), round6(179.5 + random() * 0.5)]
      else if (roll < 0.12) [lat, lon] = [round6(-10 + random()), round6(-180 + random() * 0.5)]
      else if (roll < 0.13) [lat, lon] = [round6(89.5 + random() * 0.5), round6(-180 + random() * 360)]
      else if (roll < 0.14) [lat, lon] = [pick([90, -90, 0]), pick([180, -180, 0])]
      else if (roll < 0.2) [lat, lon] = [round6(55.7 + Math.floor(random() * 5) * 0.05), round6(37.4 + Math.floor(random() * 5) * 0.05)]
      const price =
        random() < 0.1 ? null : pick([10, 99.99, 1_000_000, 5_000_000, 9_999_999.99, 12_000_000]) * (random() < 0.5 ? 1 : 1 + Math.floor(random() * 9))
      const rooms = random() < 0.1 ? null : Math.floor(random() * 5)
      const area = random() < 0.1 ? null : round6(20 + Math.floor(random() * 100) + (random() < 0.5 ? 0.5 : 0))
      const attrs = JSON.stringify({
        ...(rooms === null ? {} : { rooms: String(rooms) }),
        ...(area === null ? {} : { area: area.toFixed(2) }),
        floor: '2',
        total_floors: '9',
      })
      const status = random() < 0.05 ? 4 : 2
      return sql`(${lat}::numeric, ${lon}::numeric, ${random() < 0.7 ? 1 : 2}::smallint, ${random() < 0.7 ? 1 : 2}::smallint, ${attrs}::jsonb,
        ${price === null ? null : price.toFixed(2)}::numeric, ${random() < 0.1 ? null : 1 + Math.floor(random() * 3)}::int,
        ${new Date(Date.UTC(2026, 0, 1) + i * 3_600_000 + Math.floor(random() * 10) * 1000).toISOString()}::timestamptz, ${status}::smallint)`
    })
    await t.db
      .execute(sql`insert into properties (${sql.join(columns, sql`, `)}, latitude, longitude, property_type_id, deal_type_id, attributes, price, district_id, created_at, status_id)
      select ${sql.join(
        columns.map((column) => sql`p.${column}`),
        sql`, `,
      )}, v.latitude, v.longitude, v.type_id, v.deal_id, v.attrs, v.price, v.district_id, v.created_at, v.status_id
      from properties p, (values ${sql.join(rows, sql`, `)}) as v (latitude, longitude, type_id, deal_id, attrs, price, district_id, created_at, status_id)
      where p.id = ${template.id}`)
  })
  after(() => t.close())

  async function published(): Promise<Row[]> {
    return queryRows<Row>(
      t.db,
      sql`select id, latitude::float8 as lat, longitude::float8 as lon, property_type_id as type, deal_type_id as deal, rooms,
            area::float8 as area, price::float8 as price, district_id as district, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as created
          from properties where status_id = 2`,
    )
  }

  async function get<T>(url: string): Promise<T> {
    const response = await t.app.inject(url)
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`)
    return response.json<T>()
  }

  describe('combined filters against a brute-force pass', () => {
    it('search totals, pages, cursor walks and cluster totals match the stored rows', async () => {
      const rows = await published()
      for (let i = 0; i < Number(process.env.REVIEW_ITERATIONS ?? 70); i++) {
        const params: string[] = []
        const keeps: ((row: Row) => boolean)[] = []
        if (random() < 0.4) {
          const d = 1 + Math.floor(random() * 3)
          params.push(`district_id=${d}`)
          keeps.push((r) => r.district === d)
        }
        if (random() < 0.4) {
          const rooms = Math.floor(random() * 5)
          params.push(`rooms=${rooms}`)
          keeps.push((r) => r.rooms === rooms)
        }
        if (random() < 0.2) {
          const city = pick([1, 1, 1, 2])
          params.push(`city_id=${city}`)
          if (city !== 1) keeps.push(() => false)
        }
        if (random() < 0.15) {
          const tenant = pick([agency.tenantId, agency.tenantId, agency.tenantId + 1])
          params.push(`tenant_id=${tenant}`)
          if (tenant !== agency.tenantId) keeps.push(() => false)
        }
        if (random() < 0.3) {
          const deal = pick([1, 2])
          params.push(`deal_type_id=${deal}`)
          keeps.push((r) => r.deal === deal)
        }
        if (random() < 0.15) {
          const a = pick([70.5, 119.5])
          params.push(`max_area=${a}`)
          keeps.push((r) => r.area !== null && r.area <= a)
        }
        if (random() < 0.3) {
          const type = pick([1, 2])
          params.push(`property_type_id=${type}`)
          keeps.push((r) => r.type === type)
        }
        if (random() < 0.5) {
          const [a, b] = [pick([0, 10, 99.99, 1_000_000, 4_999_999.99, 5_000_000, 20_000_000]), pick([99.99, 5_000_000, 9_999_999.99, 50_000_000, 1e12])].sort(
            (x, y) => x - y,
          ) as [number, number]
          const which = pick(['both', 'min', 'max'])
          if (which !== 'max') {
            params.push(`min_price=${a}`)
            keeps.push((r) => r.price !== null && r.price >= a)
          }
          if (which !== 'min') {
            params.push(`max_price=${b}`)
            keeps.push((r) => r.price !== null && r.price <= b)
          }
        }
        if (random() < 0.25) {
          const a = pick([20, 50.5, 70.5])
          params.push(`min_area=${a}`)
          keeps.push((r) => r.area !== null && r.area >= a)
        }
        let box: number[] | undefined
        let near: [number, number, number] | undefined
        const geo = random()
        if (geo < 0.55) {
          const west = round6(37.3 + random() * 0.4)
          const south = round6(55.6 + random() * 0.25)
          const g = () => Math.floor(random() * 5) * 0.05
          const boxRoll = random()
          box =
            boxRoll < 0.15
              ? [-180, -90, 180, 90]
              : boxRoll < 0.35
                ? [round6(37.4 + g()), round6(55.7 + g()), round6(37.45 + g() + 0.05 * Math.floor(random() * 3)), round6(55.75 + g())].map((v, k, all) =>
                    k >= 2 && v <= all[k - 2]! ? round6(all[k - 2]! + 0.05) : v,
                  )
                : boxRoll < 0.45
                  ? pick([
                      [179, -11, 180, -9],
                      [-180, -11, -179, -9],
                      [-180, 89, 180, 90],
                      [-180, -90, 180, -89],
                      [-180, -90, 0, 0],
                      [0, 0, 180, 90],
                    ])
                  : [west, south, round6(west + 0.02 + random() * 0.3), round6(south + 0.02 + random() * 0.2)]
          const [w, s, e, n] = box as [number, number, number, number]
          params.push(`bbox=${box.join(',')}`)
          keeps.push((r) => r.lat !== null && r.lon !== null && r.lon >= w && r.lon <= e && r.lat >= s && r.lat <= n)
        }
        if ((geo >= 0.55 && geo < 0.75) || (geo < 0.55 && random() < 0.3)) {
          near = random() < 0.2 ? [-9.5, 179.9, 100_000] : [round6(55.6 + random() * 0.3), round6(37.3 + random() * 0.5), pick([500, 3000, 15000])]
          const [la, lo, rad] = near
          params.push(`near=${la},${lo}`, `radius_m=${rad}`)
          keeps.push((r) => r.lat !== null && r.lon !== null && isWithinRadius(distanceMetres(r.lat, r.lon, la, lo), rad))
        }
        const matches = rows.filter((r) => keeps.every((keep) => keep(r)))
        const sort = near && random() < 0.5 ? 'distance' : pick(['created_desc', 'price_asc', 'price_desc'])
        const query = params.join('&')
        const ordered = matches.slice().sort((a, b) => {
          if (sort === 'created_desc') return a.created < b.created ? 1 : a.created > b.created ? -1 : b.id - a.id
          if (sort === 'price_asc') return (a.price ?? Infinity) - (b.price ?? Infinity) || a.id - b.id
          if (sort === 'price_desc') return (b.price ?? Infinity) - (a.price ?? Infinity) || b.id - a.id
          const [la, lo] = near!
          return distanceMetres(a.lat!, a.lon!, la, lo) - distanceMetres(b.lat!, b.lon!, la, lo) || a.id - b.id
        })
        const offset = random() < 0.5 ? 0 : Math.floor(random() * (matches.length + 3))
        const limit = pick([1, 5, 20, 100])
        const page = await get<CataloguePage>(`/mls/properties?${query}&sort=${sort}&limit=${limit}&offset=${offset}`)
        assert.equal(page.total, matches.length, `total of ${query}`)
        const want = ordered.slice(offset, offset + limit).map((r) => r.id)
        const got = page.items.map((item) => item.id)
        if (sort === 'distance')
          assert.deepEqual(
            got.slice().sort((a, b) => a - b),
            want.slice().sort((a, b) => a - b),
            `page of ${query}&sort=${sort}&offset=${offset}`,
          )
        else assert.deepEqual(got, want, `page of ${query}&sort=${sort}&limit=${limit}&offset=${offset}`)
        assert.equal(page.next_cursor === null, offset + limit >= matches.length, `next_cursor of ${query}&sort=${sort}&limit=${limit}&offset=${offset}`)
        if (near && !box) {
          const world = await get<MapClusters>(`/mls/clusters?${query}&bbox=-180,-90,180,90&zoom=0`)
          assert.equal(world.total, matches.length, `world clusters of ${query}`)
        }
        // A cursor walk covers every match exactly once.
        const seen: number[] = []
        let cursor: string | null = ''
        for (let pages = 0; cursor !== null && pages < 100; pages++) {
          const next: CataloguePage = await get<CataloguePage>(`/mls/properties?${query}&sort=${sort}&limit=7${cursor ? `&cursor=${cursor}` : ''}`)
          seen.push(...next.items.map((item) => item.id))
          cursor = next.next_cursor
        }
        assert.deepEqual(
          seen.slice().sort((a, b) => a - b),
          matches.map((r) => r.id).sort((a, b) => a - b),
          `cursor walk of ${query}&sort=${sort}`,
        )
        if (box) {
          const zoom = box[0] === -180 ? pick([0, 1, 2, 3, 4, 5]) : pick([5, 8, 10, 11, 12, 13])
          const span = Math.max(box[2]! - box[0]!, box[3]! - box[1]!)
          if (span / cellDegrees(zoom) <= 256) {
            const clusters = await get<MapClusters>(`/mls/clusters?${query}&zoom=${zoom}`)
            assert.equal(clusters.total, matches.length, `clusters total of ${query}&zoom=${zoom}`)
            assert.equal(
              clusters.clusters.reduce((sum, c) => sum + c.count, 0),
              matches.length,
            )
          }
        }
      }
    })
  })

  describe('input probes', () => {
    const bad: [string, (string | number)[]][] = [
      ['/mls/properties?bbox=180,-90,-180,90', ['query', 'bbox']],
      ['/mls/properties?bbox=NaN,0,1,1', ['query', 'bbox']],
      ['/mls/properties?bbox=Infinity,0,1,1', ['query', 'bbox']],
      ['/mls/properties?bbox=0,0,1e400,1', ['query', 'bbox']],
      ['/mls/properties?bbox=0x1,0,1,1', ['query', 'bbox']],
      ['/mls/properties?bbox=', ['query', 'bbox']],
      ['/mls/properties?bbox=1,2,3', ['query', 'bbox']],
      ['/mls/properties?bbox=1,2,3,4,5', ['query', 'bbox']],
      ['/mls/properties?bbox=0,0,1,1&bbox=0,0,2,2', ['query', 'bbox']],
      ['/mls/properties?bbox=%EF%BC%91,0,2,2', ['query', 'bbox']],
      ['/mls/properties?bbox=0,-91,1,1', ['query', 'bbox']],
      ['/mls/properties?bbox=0,0,181,1', ['query', 'bbox']],
      ['/mls/properties?bbox=0,0,0,1', ['query', 'bbox']],
      ['/mls/properties?bbox=' + '1'.repeat(300), ['query', 'bbox']],
      ['/mls/properties?near=91,0&radius_m=10', ['query', 'near']],
      ['/mls/properties?near=0,0', ['query', 'radius_m']],
      ['/mls/properties?radius_m=10', ['query', 'radius_m']],
      ['/mls/properties?near=0,0&radius_m=0', ['query', 'radius_m']],
      ['/mls/properties?near=0,0&radius_m=100001', ['query', 'radius_m']],
      ['/mls/properties?near=0,0&radius_m=NaN', ['query', 'radius_m']],
      ['/mls/properties?near=0,0&radius_m=1e400', ['query', 'radius_m']],
      ['/mls/properties?near=0,0&radius_m=-0', ['query', 'radius_m']],
      ['/mls/properties?near=0,0,0&radius_m=5', ['query', 'near']],
      ['/mls/properties?near=abc&radius_m=5', ['query', 'near']],
      ['/mls/properties?sort=distance', ['query', 'sort']],
      ['/mls/properties?sort=nearest', ['query', 'sort']],
      ['/mls/properties?min_price=5&max_price=4', ['query', 'min_price']],
      ['/mls/properties?min_area=5&max_area=4', ['query', 'min_area']],
      ['/mls/properties?min_price=-1', ['query', 'min_price']],
      ['/mls/properties?min_price=1e400', ['query', 'min_price']],
      ['/mls/properties?min_price=Infinity', ['query', 'min_price']],
      ['/mls/properties?max_price=0x10', ['query', 'max_price']],
      ['/mls/properties?rooms=1000001', ['query', 'rooms']],
      ['/mls/properties?rooms=1.5', ['query', 'rooms']],
      ['/mls/properties?limit=0', ['query', 'limit']],
      ['/mls/properties?limit=101', ['query', 'limit']],
      ['/mls/properties?offset=-1', ['query', 'offset']],
      ['/mls/properties?offset=9007199254740992', ['query', 'offset']],
      ['/mls/properties?cursor=abc', ['query', 'cursor']],
      ['/mls/properties?cursor=' + 'A'.repeat(401), ['query', 'cursor']],
      ['/mls/properties?cursor=a+b', ['query', 'cursor']],
      ['/mls/properties?cursor=', ['query', 'cursor']],
      ['/mls/properties?city_id=0', ['query', 'city_id']],
      ['/mls/properties?city_id=2147483648', ['query', 'city_id']],
      ['/mls/properties?district_id=abc', ['query', 'district_id']],
      ['/mls/clusters?zoom=3', ['query', 'bbox']],
      ['/mls/clusters?bbox=0,0,1,1', ['query', 'zoom']],
      ['/mls/clusters?bbox=0,0,1,1&zoom=21', ['query', 'zoom']],
      ['/mls/clusters?bbox=0,0,1,1&zoom=-1', ['query', 'zoom']],
      ['/mls/clusters?bbox=0,0,1,1&zoom=1.5', ['query', 'zoom']],
      ['/mls/clusters?bbox=0,0,1,1&zoom=1e1', ['query', 'zoom']],
      ['/mls/clusters?bbox=-180,-90,180,90&zoom=6', ['query', 'bbox']],
      ['/mls/clusters?bbox=-180,-90,180,90&zoom=20', ['query', 'bbox']],
      ['/mls/clusters?bbox=1,1,0,0&zoom=5', ['query', 'bbox']],
      ['/mls/clusters?bbox=0,0,1,1&zoom=5&min_price=3&max_price=2', ['query', 'min_price']],
      ['/mls/clusters?bbox=0,0,1,1&zoom=5&near=0,0', ['query', 'radius_m']],
      ['/mls/changes?after=abc', ['query', 'after']],
      ['/mls/changes?after=' + 'A'.repeat(65), ['query', 'after']],
      ['/mls/changes?after=' + Buffer.from('c1.x').toString('base64url'), ['query', 'after']],
      ['/mls/changes?after=' + Buffer.from('c-1.0').toString('base64url'), ['query', 'after']],
      ['/mls/changes?after=' + Buffer.from('c1234567890123456.0').toString('base64url'), ['query', 'after']],
      ['/mls/changes?after=' + Buffer.from('c999999999999999.999999999999999').toString('base64url'), ['query', 'after']],
      ['/mls/changes?limit=0', ['query', 'limit']],
      ['/mls/changes?limit=1001', ['query', 'limit']],
      ['/mls/properties/1.0', ['path', 'id']],
      ['/mls/properties/x1', ['path', 'id']],
    ]
    for (const [url, loc] of bad) {
      it(`refuses ${url.slice(0, 120)}`, async () => {
        assertRejected(await t.app.inject(url), loc, url)
      })
    }

    const good = [
      '/mls/properties?bbox=-180,-90,180,90',
      '/mls/properties?bbox=1e-320,0,1e-300,1e-300',
      '/mls/properties?bbox=-180,89.999999,180,90',
      '/mls/properties?bbox=179.999999,-90,180,90',
      '/mls/properties?near=90,0&radius_m=100000',
      '/mls/properties?near=-90,180&radius_m=100000&sort=distance',
      '/mls/properties?near=0,180&radius_m=100000&sort=distance',
      '/mls/properties?near=0,0&radius_m=1e-300',
      '/mls/properties?near=55.75,37.6&radius_m=5000&bbox=0,0,1,1',
      '/mls/properties?min_price=1e300',
      '/mls/properties?max_price=1e300',
      '/mls/properties?min_price=1e-300',
      '/mls/properties?min_price=1e300&max_price=1e301',
      '/mls/properties?min_price=0.001&max_price=0.002',
      '/mls/properties?min_price=1e15&bbox=-180,-90,180,90',
      '/mls/properties?max_price=1e300&bbox=37,55,38,56',
      '/mls/properties?min_area=1e300',
      '/mls/properties?min_price=5&max_price=5e300&district_id=1',
      '/mls/properties?min_price=5e20&max_price=5e300&district_id=1&rooms=2',
      '/mls/properties?offset=9007199254740991',
      '/mls/properties?offset=9007199254740991&bbox=37,55,38,56',
      '/mls/properties?offset=9007199254740991&min_price=1',
      '/mls/properties?offset=9007199254740991&sort=price_asc',
      '/mls/properties?offset=9007199254740991&near=55.75,37.6&radius_m=5000&sort=distance',
      '/mls/properties?offset=100000&bbox=37,55,38,56&min_price=1',
      '/mls/properties?district_id=2147483647&city_id=2147483647&tenant_id=2147483647&residential_complex_id=2147483647',
      '/mls/properties?property_type_id=32767&deal_type_id=32767',
      '/mls/clusters?bbox=-180,-90,180,90&zoom=0',
      '/mls/clusters?bbox=-180,-90,180,90&zoom=5',
      '/mls/clusters?bbox=-180,-90,180,90&zoom=5&min_price=1&max_price=1e300',
      '/mls/clusters?bbox=-180,-90,180,90&zoom=5&property_type_id=1&rooms=2',
      '/mls/clusters?bbox=179.99,89.99,180,90&zoom=20',
      '/mls/clusters?bbox=-180,-90,-179.99,-89.99&zoom=20',
      '/mls/clusters?bbox=37,55,38,56&zoom=11&near=0,0&radius_m=100',
      '/mls/clusters?bbox=-180,-90,180,90&zoom=0&near=0,180&radius_m=100000',
      '/mls/changes?limit=1000',
      '/mls/changes/snapshot',
      '/mls/properties/2147483647',
    ]
    for (const url of good) {
      it(`serves ${url.slice(0, 120)}`, async () => {
        const response = await t.app.inject(url)
        assert.ok(response.statusCode < 500, `${url}: ${response.statusCode} ${response.body}`)
        assert.ok(response.statusCode === 200 || response.statusCode === 404, `${url}: ${response.statusCode} ${response.body}`)
      })
    }
  })

  describe('webhook filter probes', () => {
    const url = 'http://127.0.0.1:9/hook'
    const badFilters: [unknown, (string | number)[]][] = [
      [{ min_price: 5, max_price: 4 }, ['body', 'filter', 'min_price']],
      [{ min_area: 5, max_area: 4 }, ['body', 'filter', 'min_area']],
      [{ bbox: 'garbage' }, ['body', 'filter', 'bbox']],
      [{ bbox: '180,-90,-180,90' }, ['body', 'filter', 'bbox']],
      [{ bbox: '0,0,1,NaN' }, ['body', 'filter', 'bbox']],
      [{ bbox: 5 }, ['body', 'filter', 'bbox']],
      [{ bbox: '1'.repeat(201) }, ['body', 'filter', 'bbox']],
      [{ near: '0,0' }, ['body', 'filter', 'radius_m']],
      [{ radius_m: 5 }, ['body', 'filter', 'radius_m']],
      [{ near: '91,0', radius_m: 5 }, ['body', 'filter', 'near']],
      [{ near: '0,0', radius_m: 0 }, ['body', 'filter', 'radius_m']],
      [{ near: '0,0', radius_m: 100001 }, ['body', 'filter', 'radius_m']],
      [{ near: '0,0', radius_m: '5' }, ['body', 'filter', 'radius_m']],
      [{ sort: 'distance' }, ['body', 'filter', 'sort']],
      [{ limit: 5 }, ['body', 'filter', 'limit']],
      [{ offset: 5 }, ['body', 'filter', 'offset']],
      [{ cursor: 'abc' }, ['body', 'filter', 'cursor']],
      [{ colour: 'red' }, ['body', 'filter', 'colour']],
      [{ min_price: '5' }, ['body', 'filter', 'min_price']],
      [{ min_price: -1 }, ['body', 'filter', 'min_price']],
      [{ rooms: 1.5 }, ['body', 'filter', 'rooms']],
      [{ rooms: 1_000_001 }, ['body', 'filter', 'rooms']],
      [{ city_id: 0 }, ['body', 'filter', 'city_id']],
      [{ city_id: null }, ['body', 'filter', 'city_id']],
      [{ city_id: 2147483648 }, ['body', 'filter', 'city_id']],
      [{ property_type_id: 32768 }, ['body', 'filter', 'property_type_id']],
      [{ district_id: true }, ['body', 'filter', 'district_id']],
    ]
    for (const [filter, loc] of badFilters) {
      it(`POST refuses filter ${JSON.stringify(filter)}`, async () => {
        const payload = `{"url":${JSON.stringify(url)},"events":["mls.new_listing"],"filter":${JSON.stringify(filter)}}`
        const response = await t.app.inject({ method: 'POST', url: '/webhooks', headers: { ...agency.headers, 'content-type': 'application/json' }, payload })
        assertRejected(response, loc, JSON.stringify(filter))
      })
      it(`PATCH refuses filter ${JSON.stringify(filter)}`, async () => {
        const created = await t.app.inject({ method: 'POST', url: '/webhooks', headers: agency.headers, payload: { url, events: ['mls.new_listing'] } })
        assert.equal(created.statusCode, 201, created.body)
        const id = created.json<{ id: number }>().id
        const payload = `{"filter":${JSON.stringify(filter)}}`
        const response = await t.app.inject({
          method: 'PATCH',
          url: `/webhooks/${id}`,
          headers: { ...agency.headers, 'content-type': 'application/json' },
          payload,
        })
        await t.app.inject({ method: 'DELETE', url: `/webhooks/${id}`, headers: agency.headers })
        assertRejected(response, loc, JSON.stringify(filter))
      })
    }
    it('refuses a filter that is not an object', async () => {
      for (const filter of [[], 'x', 5, true]) {
        const response = await t.app.inject({
          method: 'POST',
          url: '/webhooks',
          headers: agency.headers,
          payload: { url, events: ['mls.new_listing'], filter },
        })
        assertRejected(response, ['body', 'filter'], JSON.stringify(filter))
      }
    })
    it('refuses __proto__ in a filter', async () => {
      const payload = `{"url":${JSON.stringify(url)},"events":["mls.new_listing"],"filter":{"__proto__":{"x":1},"city_id":1}}`
      const response = await t.app.inject({ method: 'POST', url: '/webhooks', headers: { ...agency.headers, 'content-type': 'application/json' }, payload })
      assert.ok(response.statusCode >= 400 && response.statusCode < 500, response.body)
      assert.equal(typeof response.json<{ detail: string }>().detail, 'string')
    })
    it('refuses a filter number that is not finite', async () => {
      const payload = `{"url":${JSON.stringify(url)},"events":["mls.new_listing"],"filter":{"min_price":1e400}}`
      const response = await t.app.inject({ method: 'POST', url: '/webhooks', headers: { ...agency.headers, 'content-type': 'application/json' }, payload })
      assertRejected(response, ['body', 'filter', 'min_price'], '1e400')
    })
    it('keeps a valid filter as given', async () => {
      const filter = { bbox: '-180,-90,180,90', near: '90,180', radius_m: 100000, min_price: 0, max_price: 1e300, rooms: 0 }
      const response = await t.app.inject({ method: 'POST', url: '/webhooks', headers: agency.headers, payload: { url, events: ['mls.new_listing'], filter } })
      assert.equal(response.statusCode, 201, response.body)
      assert.deepEqual(response.json<{ filter: unknown }>().filter, filter)
      const id = response.json<{ id: number }>().id
      const list = await t.app.inject({ method: 'GET', url: '/webhooks', headers: agency.headers })
      assert.deepEqual(list.json<{ id: number; filter: unknown }[]>().find((w) => w.id === id)?.filter, filter)
      await t.app.inject({ method: 'DELETE', url: `/webhooks/${id}`, headers: agency.headers })
    })
  })

  describe('conditional requests', () => {
    for (const url of ['/mls/properties?limit=3', '/mls/clusters?bbox=37,55,38,56&zoom=8', '/mls/properties?near=55.75,37.6&radius_m=5000&sort=distance']) {
      it(`answers 304 to a current tag of ${url}`, async () => {
        const first = await t.app.inject(url)
        assert.equal(first.statusCode, 200)
        const tag = String(first.headers.etag)
        for (const inm of [tag, `W/${tag}`, '*', `"nope", ${tag}`]) {
          const again = await t.app.inject({ url, headers: { 'if-none-match': inm, 'cache-control': 'no-cache' } })
          assert.equal(again.statusCode, 304, inm)
          assert.equal(again.body, '')
        }
        const other = await t.app.inject({ url, headers: { 'if-none-match': '"nope"' } })
        assert.equal(other.statusCode, 200)
      })
    }
  })

  describe('tampered cursors with a valid binding', () => {
    const digest = (filters: unknown[]) => createHash('sha256').update(JSON.stringify(filters)).digest('base64url').slice(0, 12)
    const noFilters = Array.from({ length: 18 }, () => null)
    const cursor = (s: string, k: unknown[], f = digest(noFilters)) => Buffer.from(JSON.stringify({ s, f, k })).toString('base64url')
    const cases: [string, string, unknown[], number][] = [
      ['created_desc', '', ['9999-12-31T23:59:59.999999Z', 2147483647], 200],
      ['created_desc', '', ['0001-01-01T00:00:00Z', 1], 200],
      ['created_desc', '', ['2026-02-30T00:00:00Z', 1], 422],
      ['created_desc', '', ['2026-06-30T23:59:60Z', 1], 422],
      ['created_desc', '', ['2026-01-01T00:00:00.1234567Z', 1], 422],
      ['created_desc', '', ['2026-01-01T00:00:00+01:00', 1], 422],
      ['created_desc', '', ['2026-01-01T00:00:00Z', 0], 422],
      ['created_desc', '', ['2026-01-01T00:00:00Z', 2147483648], 422],
      ['created_desc', '', ['2026-01-01T00:00:00Z', 1.5], 422],
      ['created_desc', '', ['2026-01-01T00:00:00Z', '1'], 422],
      ['created_desc', '', ['2026-01-01T00:00:00Z'], 422],
      ['created_desc', '', ['2026-01-01T00:00:00Z', 1, 2], 422],
      ['price_asc', '&sort=price_asc', [1e-7, 1], 200],
      ['price_asc', '&sort=price_asc', [5e-324, 1], 200],
      ['price_asc', '&sort=price_asc', [999999999999999.9, 1], 200],
      ['price_asc', '&sort=price_asc', [1e15, 1], 422],
      ['price_asc', '&sort=price_asc', [-1, 1], 422],
      ['price_asc', '&sort=price_asc', [null, 1], 200],
      ['price_desc', '&sort=price_desc', [null, 2147483647], 200],
      ['price_desc', '&sort=price_desc', [0, 1], 200],
      ['price_asc', '&sort=price_asc', ['5', 1], 422],
      ['price_asc', '&sort=created_desc', [5, 1], 422],
    ]
    for (const [s, query, k, status] of cases) {
      it(`cursor ${s} ${JSON.stringify(k)} is ${status}`, async () => {
        const response = await t.app.inject(`/mls/properties?limit=5${query}&cursor=${cursor(s, k)}`)
        assert.equal(response.statusCode, status, response.body)
        if (status === 422) assertRejected(response, ['query', 'cursor'], 'cursor')
      })
    }
    it('distance cursors at the poles and the antimeridian', async () => {
      const first = await t.app.inject('/mls/properties?near=-9.5,179.9&radius_m=100000&sort=distance&limit=1')
      assert.equal(first.statusCode, 200, first.body)
      const real = first.json<CataloguePage>().next_cursor
      assert.ok(real)
      const { f } = JSON.parse(Buffer.from(real, 'base64url').toString()) as { f: string }
      const filters = f
      for (const k of [
        [90, 180, 1],
        [-90, -180, 2147483647],
        [1e-300, -1e-300, 1],
        [89.9999996, 179.9999996, 1],
      ]) {
        const response = await t.app.inject(`/mls/properties?near=-9.5,179.9&radius_m=100000&sort=distance&limit=5&cursor=${cursor('distance', k, filters)}`)
        assert.ok(
          response.statusCode === 200 || (response.statusCode === 422 && k[0] === 89.9999996),
          `${JSON.stringify(k)}: ${response.statusCode} ${response.body}`,
        )
      }
    })
  })

  describe('change feed cursors the feed never gave', () => {
    const decode = (cursor: string) => {
      const [, position, horizon] = /^c(\d+)\.(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString())!
      return { position: Number(position), horizon: Number(horizon) }
    }
    const encode = (position: number, horizon: number) => Buffer.from(`c${position}.${horizon}`).toString('base64url')
    interface Changes {
      items: { id: number; op: string; cursor: string }[]
      next_cursor: string
      has_more: boolean
    }

    async function publishOne(): Promise<number> {
      const { id } = await submitProperty(t.app, agency, { location: { city_id: 1, address: `ул. Лентная, д. ${Math.floor(random() * 1e6)}` } })
      await runInternalCheck(t.app)
      return id
    }

    it('refuses a cursor past the end of the feed rather than skipping the changes that come after it', async () => {
      const { cursor } = await get<{ cursor: string }>('/mls/changes/snapshot')
      const { position, horizon } = decode(cursor)
      // A position the feed has not reached: not a cursor this service gave.
      const ahead = encode(position + 1000, horizon)
      const answer = await t.app.inject(`/mls/changes?after=${ahead}`)
      const id = await publishOne()
      // The publication is in the feed after the snapshot…
      const fromSnapshot = await get<Changes>(`/mls/changes?after=${cursor}`)
      assert.ok(fromSnapshot.items.some((item) => item.id === id && item.op === 'upsert'))
      // …but a reader holding the forged cursor never sees it: it is told there is nothing new.
      const fromAhead = await t.app.inject(`/mls/changes?after=${ahead}`)
      assertRejected(answer, ['query', 'after'], `after=${ahead} (${fromAhead.statusCode} ${fromAhead.body} once listing ${id} was published)`)
    })

    it('answers 410 to a cursor from before the oldest removal kept, whatever horizon the cursor claims', async () => {
      const { cursor: old } = await get<{ cursor: string }>('/mls/changes/snapshot')
      const id = await publishOne()
      const withdrawn = await t.app.inject({ method: 'POST', url: `/properties/${id}/status`, headers: agency.headers, payload: { status_id: 4 } })
      assert.equal(withdrawn.statusCode, 200, withdrawn.body)
      await t.db.execute(sql`update catalogue_changes set changed_at = now() - interval '91 days' where listing_id = ${id}`)
      assert.ok((await t.app.services.changes.forgetRemovals(90, 1000)) >= 1)
      // The genuine cursor answers 410, as the docs say.
      assert.equal((await t.app.inject(`/mls/changes?after=${old}`)).statusCode, 410)
      // The same position with a horizon the service never had (past the feed's pruning) reads on silently, missing the removal.
      const { position } = decode(old)
      const forged = encode(position, 999_999_999_999_999)
      const answer = await t.app.inject(`/mls/changes?after=${forged}`)
      assert.ok(answer.statusCode === 410 || answer.statusCode === 422, `after=${forged}: ${answer.statusCode} ${answer.body}`)
    })
  })

  describe('clusters and a sort they do not take', () => {
    it('ignores sort=distance on /mls/clusters as it ignores any other sort (clusters take no sort; unknown query parameters are ignored)', async () => {
      const base = '/mls/clusters?bbox=37,55,38,56&zoom=8'
      const plain = await get<MapClusters>(base)
      for (const sort of ['price_asc', 'bogus', 'distance']) {
        const response = await t.app.inject(`${base}&sort=${sort}`)
        assert.equal(response.statusCode, 200, `sort=${sort}: ${response.body}`)
        assert.deepEqual(response.json<MapClusters>(), plain)
      }
    })
  })

  describe('every cross-field problem of a search at once', () => {
    it('names every bad filter of a search in one 422, as the same filter of a webhook subscription does', async () => {
      const filter = { min_price: 5, max_price: 4, min_area: 5, max_area: 4, bbox: '1,1,0,0' }
      const hook = await t.app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: agency.headers,
        payload: { url: 'http://127.0.0.1:9/hook', events: ['mls.new_listing'], filter },
      })
      assert.equal(hook.statusCode, 422, hook.body)
      const hookLocs = hook
        .json<ValidationErrorBody>()
        .errors.map((error) => error.loc.slice(2).join('.'))
        .sort()
      assert.deepEqual(hookLocs, ['bbox', 'min_area', 'min_price'])
      const query = Object.entries(filter)
        .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
        .join('&')
      const search = await t.app.inject(`/mls/properties?${query}`)
      assert.equal(search.statusCode, 422, search.body)
      const searchLocs = search
        .json<ValidationErrorBody>()
        .errors.map((error) => error.loc.slice(1).join('.'))
        .sort()
      assert.deepEqual(searchLocs, hookLocs, `GET /mls/properties answered ${search.body}`)
    })

    it('names each bad map parameter, not only the first, in a search and in a subscription filter alike', async () => {
      const cases: [string, Record<string, string | number>, string[]][] = [
        ['a bad box and a bad point', { bbox: '1,1,0,0', near: '91,0', radius_m: 500 }, ['bbox', 'near']],
        ['a bad box and a radius without a point', { bbox: 'x', radius_m: 500 }, ['bbox', 'radius_m']],
        ['a bad point, a flat box and no radius', { near: '1,2,3', bbox: '0,0,0,0' }, ['bbox', 'near', 'radius_m']],
        ['a bad point and no radius', { near: '0,200' }, ['near', 'radius_m']],
      ]
      for (const [what, filter, expected] of cases) {
        const hook = await t.app.inject({
          method: 'POST',
          url: '/webhooks',
          headers: agency.headers,
          payload: { url: 'http://127.0.0.1:9/hook', events: ['mls.new_listing'], filter },
        })
        assert.equal(hook.statusCode, 422, `${what}: ${hook.body}`)
        const hookLocs = hook.json<ValidationErrorBody>().errors.map((error) => error.loc.slice(2).join('.'))
        assert.deepEqual(hookLocs.sort(), expected, `${what}: ${hook.body}`)
        const query = Object.entries(filter)
          .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
          .join('&')
        const search = await t.app.inject(`/mls/properties?${query}&sort=distance`)
        assert.equal(search.statusCode, 422, `${what}: ${search.body}`)
        const searchLocs = search.json<ValidationErrorBody>().errors.map((error) => error.loc.slice(1).join('.'))
        // sort=distance is refused too when no point is given at all.
        const withSort = filter.near === undefined ? [...expected, 'sort'].sort() : expected
        assert.deepEqual(searchLocs.sort(), withSort, `${what}: ${search.body}`)
      }
    })
  })
})

describe('the rooms filter', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  it('finds a listing by any number of rooms it can have and the catalogue shows, a hotel’s 1,200 too', async () => {
    const agency = await createTenant(t.app)
    const { id } = await submitProperty(t.app, agency, {
      property_type: 'Коммерция',
      price: 450_000_000,
      location: { city_id: 1, address: 'Москва, ул. Гостиничная, д. 1' },
      attributes: { area: '30000', rooms: '1200', floor: '1', total_floors: '20' },
    })
    await runInternalCheck(t.app)
    assert.equal((await t.app.inject(`/mls/properties/${id}`)).json<{ rooms: number }>().rooms, 1200)
    for (const rooms of [1200, 1_000_000]) {
      const search = await t.app.inject(`/mls/properties?rooms=${rooms}`)
      assert.equal(search.statusCode, 200, search.body)
      assert.deepEqual(
        search.json<CataloguePage>().items.map((item) => item.id),
        rooms === 1200 ? [id] : [],
      )
    }
  })
})
