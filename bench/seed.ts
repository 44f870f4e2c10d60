/**
 * Fills the database with a realistic MLS, set-based: one INSERT ... SELECT FROM
 * generate_series per chunk of listings, never a statement per row. Everything the bench
 * writes (wipe included) happens in one transaction, so an interrupted seed leaves the
 * database as it was, with its catalogue_counts trigger enabled.
 */
import { sql, type SQL } from 'drizzle-orm'
import { queryRows, type Database, type DatabaseHandle } from '../src/db/client.js'
import { seedPropertyTypes } from '../src/db/seed/dictionaries.js'
import { seedCities } from '../src/db/seed/places.js'
import { digestSecret } from '../src/lib/secrets.js'
import { ListingStatus } from '../src/modules/properties/listing-status.js'
import {
  AREA_BANDS,
  BENCH_EMAIL_DOMAIN,
  benchApiKey,
  BOOL_ATTRIBUTES,
  CITY_SPREAD,
  CITY_WEIGHTS,
  citySpread,
  DAILY_RENT,
  DISTRICT_SPREAD,
  districtCentre,
  DISTRICTS_BY_CITY,
  DEAL_WEIGHTS,
  ENUM_ATTRIBUTES,
  enumValues,
  FEMALE_NAMES,
  FEMALE_SURNAMES,
  FLAT,
  FLOOR_BANDS,
  LAND,
  MALE_NAMES,
  MALE_SURNAMES,
  PHRASES,
  PRICE_BANDS,
  ROOMS_BY_AREA,
  SALE,
  STATUS_WEIGHTS,
  STREETS,
  TYPE_WEIGHTS,
  typesFor,
  lonScale,
  UNLOCATED_SHARE,
  type Band,
  type Weighted,
} from './data.js'
import { ProgressBar } from './progress.js'

/** Reference data survives the wipe: the shipped places and the fixed dictionaries. */
const REFERENCE_TABLES = ['cities', 'districts', 'residential_complexes', 'property_types', 'deal_types', 'property_statuses']

/** How many ids (c) picks from: enough that the database cannot serve one hot row from cache. */
const SAMPLED_IDS = 5000

/**
 * (e) uploads as bench tenant 1, the largest agency (the seed skews listings toward low
 * tenant numbers), spreading its photos over this many of its properties.
 */
export const UPLOAD_TENANT = 1
const UPLOAD_PROPERTIES = 1000

export interface SeedOptions {
  listings: number
  tenants: number
  skipSeed: boolean
  /** Listings per INSERT statement. */
  chunkSize: number
}

export interface PreparedDatabase {
  serverVersion: string
  listings: number
  published: number
  tenants: number
  owners: number
  /** Wall time of the whole seed (wipe to VACUUM ANALYZE); null when --skip-seed reused data. */
  seedingSeconds: number | null
  /** The whole database on disk, indexes included (`pg_database_size`). */
  databaseBytes: number
  /** Random published listing ids, for GET /mls/properties/{id}. */
  publishedIds: number[]
  /** UPLOAD_TENANT's properties that (e) uploads photos to, unpublished ones first. */
  uploadPropertyIds: number[]
}

export async function prepareDatabase(handle: DatabaseHandle, options: SeedOptions): Promise<PreparedDatabase> {
  const db = handle.db
  const [version] = await queryRows<{ version: string }>(db, sql`select version()`)
  let seedingSeconds: number | null = null
  if (options.skipSeed) {
    console.error('--skip-seed: reusing the listings already in the database.')
  } else {
    seedingSeconds = await seed(db, options)
  }
  const stats = await readStats(db)
  if (stats.tenants === 0 || stats.published === 0) {
    throw new Error('The database has no bench tenants or no published listings: run once without --skip-seed.')
  }
  const ids = await queryRows<{ id: number }>(db, sql`select id from properties where status_id = 2 order by random() limit ${SAMPLED_IDS}::int`)
  const [size] = await queryRows<{ bytes: number }>(db, sql`select pg_database_size(current_database())::float8 as bytes`)
  return {
    serverVersion: version?.version ?? 'unknown',
    ...stats,
    seedingSeconds,
    databaseBytes: size?.bytes ?? 0,
    publishedIds: ids.map((row) => row.id),
    uploadPropertyIds: await uploadTargets(db),
  }
}

/**
 * Properties for (e) to upload to, with none of their photos left. The rows an earlier run
 * uploaded (with --skip-seed) are deleted first: their files went with that run's temporary
 * DATA_DIR, and they would count toward IMAGE_MAX_PER_PROPERTY. Closed deals take no photos
 * (409) and are left out; unpublished properties come first, so the photos leave what (b) and
 * (c) read as it was.
 */
async function uploadTargets(db: Database): Promise<number[]> {
  await db.execute(sql`delete from property_images where tenant_id = ${UPLOAD_TENANT}::int`)
  const rows = await queryRows<{ id: number }>(
    db,
    sql`select id from properties where tenant_id = ${UPLOAD_TENANT}::int and status_id <> ${ListingStatus.Closed}::int
        and held_status_id is null
        order by status_id = 2, id limit ${UPLOAD_PROPERTIES}::int`,
  )
  return rows.map((row) => row.id)
}

async function readStats(
  db: Database,
): Promise<Omit<PreparedDatabase, 'serverVersion' | 'seedingSeconds' | 'databaseBytes' | 'publishedIds' | 'uploadPropertyIds'>> {
  const [row] = await queryRows<{ listings: number; published: number; tenants: number; owners: number }>(
    db,
    sql`select (select count(*)::int from properties) as listings,
               (select count(*)::int from properties where status_id = 2) as published,
               (select count(*)::int from tenants where email like ${'%@' + BENCH_EMAIL_DOMAIN}) as tenants,
               (select count(*)::int from owners) as owners`,
  )
  return row!
}

async function seed(db: Database, options: SeedOptions): Promise<number> {
  const started = performance.now()
  const ownersPerTenant = Math.max(1, Math.ceil(options.listings / options.tenants / 3))
  const lap = stopwatch()
  await db.transaction(async (tx) => {
    // If the bench dies mid-seed, PostgreSQL notices the lost client within a second and
    // rolls the whole transaction back instead of finishing a long INSERT for nobody.
    await tx.execute(sql`select set_config('client_connection_check_interval', '1000', true)
                         where exists (select 1 from pg_settings where name = 'client_connection_check_interval')`)
    await tx.execute(sql`select setseed(0.42)`) // the same data for the same flags, run after run
    await wipe(tx)
    await insertTenants(tx, options.tenants)
    await insertOwners(tx, options.tenants, ownersPerTenant)
    console.error(`Wiped and inserted ${options.tenants} tenants with keys and ${options.tenants * ownersPerTenant} owners in ${lap()}.`)

    // The triggers would upsert catalogue_counts and the map's cells once per published row; one
    // rebuild at the end gives the same counts for a fraction of the work. Likewise the change
    // feed: one row per published listing, numbered in publication order, written at once at the end.
    await tx.execute(sql`alter table properties disable trigger properties_catalogue_counts`)
    await tx.execute(sql`alter table properties disable trigger properties_catalogue_cells`)
    await tx.execute(sql`alter table properties disable trigger properties_catalogue_cell_prices`)
    await tx.execute(sql`alter table properties disable trigger properties_catalogue_changes_insert`)
    await withoutCatalogueIndexes(tx, async () => {
      const bar = new ProgressBar('listings', options.listings)
      for (let first = 1; first <= options.listings; first += options.chunkSize) {
        const last = Math.min(options.listings, first + options.chunkSize - 1)
        await tx.execute(insertListings(first, last, options.listings, options.tenants, ownersPerTenant))
        bar.update(last)
      }
      bar.done()
      console.error(`Listings inserted in ${lap()}; building the catalogue's indexes…`)
    })
    await tx.execute(sql`alter table properties enable trigger properties_catalogue_counts`)
    await tx.execute(sql`select catalogue_counts_rebuild()`)
    await tx.execute(sql`alter table properties enable trigger properties_catalogue_cells`)
    await tx.execute(sql`select catalogue_cells_rebuild()`)
    await tx.execute(sql`alter table properties enable trigger properties_catalogue_cell_prices`)
    await tx.execute(sql`select catalogue_cell_prices_rebuild()`)
    await tx.execute(sql`alter table properties enable trigger properties_catalogue_changes_insert`)
    await tx.execute(sql`insert into catalogue_change_horizon (id, pruned_through) values (1, 0) on conflict do nothing`)
    await tx.execute(sql`insert into catalogue_changes (listing_id, position, op, changed_at)
                         select id, nextval('catalogue_change_positions'), 'upsert', coalesce(published_at, created_at)
                         from (select id, published_at, created_at from properties where status_id = 2 order by published_at, id) as published`)
  })
  console.error(`Catalogue indexes built and catalogue_counts rebuilt in ${lap()}.`)
  // Outside the transaction (VACUUM cannot run in one): fresh statistics and visibility map,
  // as a database that has been live for a while would have.
  await db.execute(
    sql`vacuum analyze properties, owners, tenants, api_keys, catalogue_changes, catalogue_counts, catalogue_counts_by_city, catalogue_counts_by_price, catalogue_counts_by_price_all_cities, catalogue_counts_by_district_price, catalogue_counts_by_cell, catalogue_counts_by_cell_price, catalogue_versions`,
  )
  console.error(`VACUUM ANALYZE in ${lap()}.`)
  const seconds = (performance.now() - started) / 1000
  console.error(`Seeding took ${seconds.toFixed(1)} s.`)
  return seconds
}

/**
 * Runs `load` without the catalogue's indexes on properties, then builds them again from their
 * own definitions (so they stay the migrations' own). A dozen covering indexes cost more to
 * keep up row by row than to build once at the end: the load took twice as long with them.
 */
async function withoutCatalogueIndexes(tx: Database, load: () => Promise<void>): Promise<void> {
  const indexes = await queryRows<{ name: string; definition: string }>(
    tx,
    sql`select indexname as name, indexdef as definition from pg_indexes
         where schemaname = current_schema() and tablename = 'properties' and starts_with(indexname, 'catalogue_')`,
  )
  for (const index of indexes) await tx.execute(sql`drop index ${sql.identifier(index.name)}`)
  await load()
  // Sorting a million entries per index in memory rather than in temporary files.
  await tx.execute(sql`select set_config('maintenance_work_mem', '256MB', true)`)
  for (const index of indexes) await tx.execute(sql.raw(index.definition))
}

/**
 * Empties every table but the reference data. Refuses when the database holds tenants the
 * bench did not create: DATABASE_URL pointing at a real MLS must never be wiped.
 */
async function wipe(db: Database): Promise<void> {
  const [tenants] = await queryRows<{ foreign: number }>(
    db,
    sql`select count(*)::int as foreign from tenants where email not like ${'%@' + BENCH_EMAIL_DOMAIN}`,
  )
  if ((tenants?.foreign ?? 0) > 0) {
    throw new Error(
      `The database has ${tenants!.foreign} tenants the bench did not create; it wipes tenants, owners and properties, ` +
        'so point DATABASE_URL at a database of its own (e.g. mls_bench).',
    )
  }
  const tables = await queryRows<{ name: string }>(
    db,
    sql`select tablename as name from pg_tables
        where schemaname = 'public' and tablename not in (${sql.join(
          REFERENCE_TABLES.map((t) => sql`${t}`),
          sql`, `,
        )})
        order by tablename`,
  )
  const list = tables.map((table) => `"public"."${table.name.replaceAll('"', '""')}"`).join(', ')
  await db.execute(sql.raw(`truncate table ${list} restart identity cascade`))
}

async function insertTenants(db: Database, count: number): Promise<void> {
  await db.execute(sql`
    insert into tenants (id, company_name, email, country, contact_name, phone, created_at) overriding system value
    select n,
           'Агентство недвижимости «Бенч ' || n || '»',
           'agency' || n || ${'@' + BENCH_EMAIL_DOMAIN},
           'RU',
           ${sql.raw(personName())},
           '+7 495 ' || substr(lpad((n % 10000000)::text, 7, '0'), 1, 3) || '-' || substr(lpad((n % 10000000)::text, 7, '0'), 4, 2)
             || '-' || substr(lpad((n % 10000000)::text, 7, '0'), 6, 2),
           now() - interval '3 years' + random() * interval '1 year'
    from generate_series(1, ${count}::int) as g(n)`)
  await db.execute(sql`select setval(pg_get_serial_sequence('tenants', 'id'), ${count}::int)`)

  // Keys are digested here exactly as authentication digests the X-API-Key it receives.
  const keys = Array.from({ length: count }, (_, i) => {
    const key = benchApiKey(i + 1)
    return { tenant_id: i + 1, display_prefix: key.slice(0, 13), digest: digestSecret(key) }
  })
  await db.execute(sql`
    insert into api_keys (tenant_id, display_prefix, digest)
    select tenant_id, display_prefix, digest
    from jsonb_to_recordset(${JSON.stringify(keys)}::jsonb) as k(tenant_id int, display_prefix text, digest text)`)
}

/**
 * Owner k belongs to tenant ((k - 1) mod T) + 1, so tenant t's owners are t, t + T, t + 2T…
 * and a listing can pick one of its own tenant's owners by arithmetic. Phones are distinct
 * (k times a prime modulo 10^9 is a bijection) and already normalised, as the API stores them.
 */
async function insertOwners(db: Database, tenants: number, perTenant: number): Promise<void> {
  const digits = `lpad(((k::bigint * 7919) % 1000000000)::text, 9, '0')`
  await db.execute(sql`
    insert into owners (id, tenant_id, name, phone, created_at, updated_at) overriding system value
    select k, 1 + (k - 1) % ${tenants}::int, o.name, o.phone, o.at, o.at
    from generate_series(1, ${tenants * perTenant}::int) as g(k)
    cross join lateral (
      select ${sql.raw(personName())} as name,
             '+7 9' || substr(${sql.raw(digits)}, 1, 2) || ' ' || substr(${sql.raw(digits)}, 3, 3) || '-'
               || substr(${sql.raw(digits)}, 6, 2) || '-' || substr(${sql.raw(digits)}, 8, 2) as phone,
             now() - random() * interval '2 years' as at
      where g.k is not null -- correlated, so the random draws are made per row
    ) as o`)
  await db.execute(sql`select setval(pg_get_serial_sequence('owners', 'id'), ${tenants * perTenant}::int)`)
}

/**
 * Listings `first`..`last` of `total`. Every random draw is made once per row in `r`
 * (volatile, so the planner keeps it a per-row subquery) and the laterals derive the
 * correlated values from it: the district lies in the city, the price fits the deal, the
 * rooms fit the area, the floor is at most the building's floors. created_at grows with the
 * row number over the last two years, as an append-only table's would.
 */
function insertListings(first: number, last: number, total: number, tenants: number, ownersPerTenant: number): SQL {
  const raw = sql.raw
  return sql`
    with city_districts as (select city_id, array_agg(id order by id) as ids from districts group by city_id),
         district_centres (id, lat, lon) as (values ${raw(districtCentresSql())}),
         city_spreads (id, spread, lon_scale) as (values ${raw(citySpreadsSql())})
    insert into properties (
      tenant_id, status_id, property_type_id, deal_type_id, price, description, owner_id,
      city_id, district_id, address, street, house_number, apartment_number, latitude, longitude,
      attributes, moderation, review_requested_at, created_at, updated_at, published_at)
    select
      a.tenant_id, a.status_id, a.type_id, b.deal_id, c.price,
      (${raw(textArray(seedPropertyTypes.map((t) => t.name)))})[a.type_id] || ', ' || b.area || ' м². ' || ${raw(randomPick(PHRASES))},
      case when r.r_owner < 0.95
           then a.tenant_id + ${tenants}::int * least(${ownersPerTenant - 1}::int, floor(r.r_owner / 0.95 * ${ownersPerTenant}::int)::int) end,
      ci.id, a.district_id,
      ci.name || ', ул. ' || a.street || ', д. ' || a.house_number || coalesce(', кв. ' || b.apartment_number, ''),
      a.street, a.house_number, b.apartment_number,
      -- normally spread around the district's centre, or wider around the city's without one
      case when r.r_located >= ${UNLOCATED_SHARE}::float8 then round((coalesce(dc.lat, ci.latitude)
        + cs.spread * (case when dc.id is null then ${CITY_SPREAD}::float8 else ${DISTRICT_SPREAD}::float8 end)
          * sqrt(-2 * ln(1 - r.r_g1)) * cos(2 * pi() * r.r_g2))::numeric, 6) end,
      case when r.r_located >= ${UNLOCATED_SHARE}::float8 then round((coalesce(dc.lon, ci.longitude)
        + cs.spread * cs.lon_scale * (case when dc.id is null then ${CITY_SPREAD}::float8 else ${DISTRICT_SPREAD}::float8 end)
          * sqrt(-2 * ln(1 - r.r_g3)) * cos(2 * pi() * r.r_g4))::numeric, 6) end,
      ${raw(attributesSql())},
      case when a.status_id <> 1 then jsonb_build_object(
        'checked_at', to_char(c.checked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"'),
        'reasons', case when a.status_id = 3
                        then '[{"code": "rejected_by_moderator", "field": null, "message": "Rejected by a moderator."}]'::jsonb
                        else '[]'::jsonb end) end,
      case when a.status_id = 1 then a.created_at end,
      a.created_at,
      coalesce(c.published_at, a.created_at),
      c.published_at
    from (
      select g.n, random() as r_city, random() as r_district, random() as r_type, random() as r_deal, random() as r_status,
             random() as r_tenant, random() as r_owner, random() as r_age, random() as r_published, random() as r_price,
             random() as r_area, random() as r_floors, random() as r_floor, random() as r_street, random() as r_house,
             random() as r_apartment, random() as r_located, random() as r_g1, random() as r_g2, random() as r_g3, random() as r_g4
      from generate_series(${first}::int, ${last}::int) as g(n)
    ) as r
    join cities ci on ci.id = ${raw(weightedCase('r.r_city', CITY_WEIGHTS))}
    join city_spreads cs on cs.id = ci.id
    left join city_districts cd on cd.city_id = ci.id
    cross join lateral (
      select ${raw(weightedCase('r.r_type', TYPE_WEIGHTS))} as type_id,
             ${raw(weightedCase('r.r_deal', DEAL_WEIGHTS))} as drawn_deal,
             ${raw(weightedCase('r.r_status', STATUS_WEIGHTS))}::smallint as status_id,
             -- a few big agencies and a long tail of small ones
             least(${tenants}::int, 1 + floor(power(r.r_tenant, 1.6) * ${tenants}::int)::int) as tenant_id,
             -- one listing in ten names no district; the rest one of the city's, if it has any
             case when r.r_district < 0.9 then cd.ids[1 + floor(r.r_district / 0.9 * cardinality(cd.ids))::int] end as district_id,
             now() - interval '730 days' * (1 - (r.n - r.r_age) / ${total}::float8) as created_at,
             (${raw(textArray(STREETS))})[1 + floor(r.r_street * ${STREETS.length}::int)::int] as street,
             (1 + floor(r.r_house * 150))::int::text as house_number
    ) as a
    left join district_centres dc on dc.id = a.district_id
    cross join lateral (
      select case when a.type_id = ${LAND}::int and a.drawn_deal = ${DAILY_RENT}::int then ${SALE}::int else a.drawn_deal end as deal_id,
             ${raw(byType('a.type_id', (type) => band(AREA_BANDS[type]!, 'r.r_area')))} as area,
             ${raw(byType('a.type_id', (type) => (FLOOR_BANDS[type] ? band(FLOOR_BANDS[type], 'r.r_floors') : 'null')))}::int as total_floors,
             case when a.type_id = ${FLAT}::int then (1 + floor(r.r_apartment * 300))::int::text end as apartment_number
    ) as b
    cross join lateral (
      select ${raw(byKey('b.deal_id', PRICE_BANDS, (priceBand) => band(priceBand, 'r.r_price')))} as price,
             ${raw(byType('a.type_id', (type) => roomsSql(type)))}::int as rooms,
             -- flats and commercial premises sit on a floor of the building; houses do not
             case when a.type_id in (1, 4) then 1 + floor(r.r_floor * b.total_floors)::int end as floor,
             case when a.status_id in (2, 4, 5)
                  then least(now(), a.created_at + r.r_published * interval '3 hours') end as published_at,
             coalesce(case when a.status_id in (2, 4, 5) then least(now(), a.created_at + r.r_published * interval '3 hours') end,
                      least(now(), a.created_at + interval '1 hour')) as checked_at
    ) as c`
}

/** `(district id, latitude, longitude), …` of every shipped district's centre (data.ts). */
function districtCentresSql(): string {
  const rows: string[] = []
  for (const [cityId, ids] of DISTRICTS_BY_CITY) {
    ids.forEach((id, index) => {
      const centre = districtCentre(cityId, index + 1, ids.length)
      rows.push(`(${id}, ${centre.lat}::float8, ${centre.lon}::float8)`)
    })
  }
  return rows.length > 0 ? rows.join(', ') : '(0, 0::float8, 0::float8)'
}

/** `(city id, spread, longitude scale), …` of every shipped city (data.ts). */
function citySpreadsSql(): string {
  return seedCities.map((city) => `(${city.id}, ${citySpread(city.id)}::float8, ${lonScale(city.id)}::float8)`).join(', ')
}

/**
 * The listing's typed attributes, each only on the property types the catalogue allows it
 * for, with exact catalogue values; nulls (not applicable, not filled in) are stripped.
 */
function attributesSql(): string {
  const pairs = [
    `'area', b.area`,
    `'rooms', c.rooms`,
    `'floor', c.floor`,
    `'total_floors', b.total_floors`,
    // land is measured in sotka (100 m²); a house comes with a plot
    `'area_land', case when a.type_id = ${LAND} then round(b.area / 100, 1)
                       when a.type_id in (${typesFor('area_land')
                         .filter((t) => t !== LAND && t !== 4)
                         .join(', ')})
                       then round((2 + random() * 28)::numeric, 1) end`,
    ...ENUM_ATTRIBUTES.map(
      (name) => `'${name}', case when a.type_id in (${typesFor(name).join(', ')}) and random() < 0.8 then ${randomPick(enumValues(name))} end`,
    ),
    ...BOOL_ATTRIBUTES.map((name) => `'${name}', case when a.type_id in (${typesFor(name).join(', ')}) then random() < 0.5 end`),
  ]
  return `jsonb_strip_nulls(jsonb_build_object(${pairs.join(',\n')}))`
}

function roomsSql(type: number): string {
  const rule = ROOMS_BY_AREA[type]
  return rule ? `least(${rule.cap}, greatest(1, round(b.area / ${rule.perRoom})))` : 'null'
}

// ---------------------------------------------------------------------------------------
// SQL fragments built from the bench's own constants (never from input), hence raw.

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`
const textArray = (values: readonly string[]) => `array[${values.map(literal).join(', ')}]::text[]`
const randomPick = (values: readonly string[]) => `(${textArray(values)})[1 + floor(random() * ${values.length})::int]`

/** `case when r < w1 then v1 when r < w1 + w2 then v2 … else vn end`. */
function weightedCase(r: string, table: readonly Weighted<number>[]): string {
  let cumulative = 0
  const branches = table.slice(0, -1).map((entry) => {
    cumulative += entry.weight
    return `when ${r} < ${cumulative} then ${entry.value}`
  })
  return `(case ${branches.join(' ')} else ${table[table.length - 1]!.value} end)`
}

/** A value of the band drawn log-uniformly from `r`, rounded to its step (as drawFromBand). */
function band(b: Band, r: string): string {
  const value = `exp(${Math.log(b.min)} + ${r} * ${Math.log(b.max / b.min)})`
  return b.step < 1 ? `round((${value})::numeric, 1)` : `(round(${value} / ${b.step}) * ${b.step})::numeric`
}

function byKey<T>(column: string, table: Readonly<Record<number, T>>, expression: (value: T) => string): string {
  const branches = Object.entries(table).map(([key, value]) => `when ${Number(key)} then ${expression(value)}`)
  return `(case ${column} ${branches.join(' ')} end)`
}

function byType(column: string, expression: (type: number) => string): string {
  return byKey(column, Object.fromEntries(seedPropertyTypes.map((t) => [t.id, t.id])), expression)
}

/** A full name, male or female with a matching surname. */
function personName(): string {
  return `case when random() < 0.5 then ${randomPick(MALE_NAMES)} || ' ' || ${randomPick(MALE_SURNAMES)}
               else ${randomPick(FEMALE_NAMES)} || ' ' || ${randomPick(FEMALE_SURNAMES)} end`
}

function stopwatch(): () => string {
  let last = performance.now()
  return () => {
    const now = performance.now()
    const text = `${((now - last) / 1000).toFixed(1)} s`
    last = now
    return text
  }
}
