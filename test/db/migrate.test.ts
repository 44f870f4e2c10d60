import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { sql, type SQL } from 'drizzle-orm'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import type { NodePgDatabase } from 'drizzle-orm/node-postgres'
import { migrate as migratePostgres } from 'drizzle-orm/node-postgres/migrator'
import type { PgliteDatabase } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { openDatabase, queryRows, type DatabaseHandle } from '../../src/db/client.js'
import { countPendingMigrations, migrateDatabase, migrationsFolder } from '../../src/db/migrate.js'
import { propertyTypes } from '../../src/db/schema.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { emptyServerDatabase, engine } from '../helpers/database.js'
import { createTenant, submitProperty } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import { nodeArguments } from '../helpers/code-tree.js'

const migrationCount = readMigrationFiles({ migrationsFolder }).length

function runMigrateCli(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, nodeArguments('src/db/migrate-cli'), {
      env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.on('close', (code) => resolve({ code, output }))
  })
}

describe('migrations', () => {
  it('apply to an empty database, and again as a no-op', async () => {
    const target = engine === 'postgres' ? await emptyServerDatabase() : undefined
    const handle = await openDatabase({ databaseUrl: target?.url, pgliteDir: undefined })
    try {
      assert.equal(await countPendingMigrations(handle.db), migrationCount)
      await migrateDatabase(handle)
      assert.equal(await countPendingMigrations(handle.db), 0)
      await migrateDatabase(handle)
      const [row] = await queryRows<{ count: number }>(handle.db, sql`select count(*)::int as count from drizzle.__drizzle_migrations`)
      assert.equal(row?.count, migrationCount)
      assert.equal(await handle.db.$count(propertyTypes), 5)
    } finally {
      await handle.close()
      await target?.drop()
    }
  })

  it('are safe when several processes start at once on one PostgreSQL', { skip: engine !== 'postgres' && 'needs DATABASE_URL' }, async () => {
    const target = await emptyServerDatabase()
    try {
      const runs = await Promise.all([1, 2, 3].map(() => runMigrateCli({ DATABASE_URL: target.url })))
      for (const run of runs) assert.equal(run.code, 0, run.output)
      const handle = await openDatabase({ databaseUrl: target.url, pgliteDir: undefined })
      try {
        const [row] = await queryRows<{ count: number }>(handle.db, sql`select count(*)::int as count from drizzle.__drizzle_migrations`)
        assert.equal(row?.count, migrationCount)
        assert.equal(await handle.db.$count(propertyTypes), 5)
      } finally {
        await handle.close()
      }
    } finally {
      await target.drop()
    }
  })

  it('run from `npm run migrate` on the embedded database in DATA_DIR', { skip: engine !== 'pglite' && 'PGlite only' }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'mls-migrate-'))
    try {
      const run = await runMigrateCli({ DATA_DIR: dataDir, DATABASE_URL: '' })
      assert.equal(run.code, 0, run.output)
      assert.match(run.output, /Database is up to date \(pglite\)/)
      const handle = await openDatabase({ databaseUrl: undefined, pgliteDir: path.join(dataDir, 'pglite') })
      try {
        assert.equal(await countPendingMigrations(handle.db), 0)
      } finally {
        await handle.close()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

/** Applies the migrations of `folder` only, as an older release of the service would have. */
async function migrateFrom(handle: DatabaseHandle, folder: string): Promise<void> {
  await handle.withSession(async (db) => {
    if (handle.kind === 'pglite') await migratePglite(db as unknown as PgliteDatabase, { migrationsFolder: folder })
    else await migratePostgres(db as unknown as NodePgDatabase, { migrationsFolder: folder })
  })
}

/** A copy of the migrations folder whose journal stops before the migration tagged `…_<name>`. */
function migrationsBefore(name: string): string {
  const folder = mkdtempSync(path.join(tmpdir(), 'mls-migrations-'))
  cpSync(migrationsFolder, folder, { recursive: true })
  const journalFile = path.join(folder, 'meta', '_journal.json')
  const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: { tag: string }[] }
  const at = journal.entries.findIndex((entry) => entry.tag.endsWith(`_${name}`))
  assert.ok(at > 0, `no migration named ${name}`)
  writeFileSync(journalFile, JSON.stringify({ ...journal, entries: journal.entries.slice(0, at) }))
  return folder
}

describe('the migration of webhook log entries to an attempt’s own outcome', () => {
  it('calls a failed attempt that was to be retried failed, keeping when the retry was due', async () => {
    const target = engine === 'postgres' ? await emptyServerDatabase() : undefined
    const handle = await openDatabase({ databaseUrl: target?.url, pgliteDir: undefined })
    const older = migrationsBefore('webhook_attempt_status')
    try {
      await migrateFrom(handle, older)
      await handle.db.execute(sql`
        with tenant as (insert into tenants (company_name, email, country) values ('Agency', 'a@agency.example', 'RU') returning id),
        subscription as (
          insert into webhook_subscriptions (tenant_id, url, events, secret_sealed)
          select id, 'https://hooks.example/', '{property.published}', 'sealed' from tenant returning id
        ),
        event as (insert into events (type, tenant_id, data) select 'property.published', id, '{}' from tenant returning id),
        delivery as (
          insert into webhook_deliveries (subscription_id, event_id, status, attempts)
          select subscription.id, event.id, 'succeeded', 3 from subscription, event returning id, subscription_id, event_id
        )
        insert into webhook_attempts (delivery_id, subscription_id, event_id, event_type, trigger, attempt, status, response_status_code, duration_ms, next_attempt_at)
        select id, subscription_id, event_id, 'property.published', 'event', attempt, status, code, 5, retry::timestamptz
        from delivery, (values (1, 'pending', 503, '2026-01-01T10:00:05Z'), (2, 'failed', 500, null), (3, 'succeeded', 200, null)) as attempts (attempt, status, code, retry)`)

      await migrateFrom(handle, migrationsFolder)
      const attempts = await queryRows<{ attempt: number; status: string; retry: string | null }>(
        handle.db,
        sql`select attempt, status, to_char(next_attempt_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') as retry from webhook_attempts order by attempt`,
      )
      assert.deepEqual(
        attempts.map((row) => [row.attempt, row.status, row.retry]),
        [
          [1, 'failed', '2026-01-01T10:00:05'],
          [2, 'failed', null],
          [3, 'succeeded', null],
        ],
      )
      await assert.rejects(handle.db.execute(sql`update webhook_attempts set status = 'pending' where attempt = 1`), (error: Error) =>
        /violates check constraint "webhook_attempts_status_check"/.test(String((error.cause as Error | undefined)?.message)),
      )
    } finally {
      await handle.close()
      await target?.drop()
      rmSync(older, { recursive: true, force: true })
    }
  })
})

describe('the repair of coordinates out of range (migration 0030)', () => {
  it('clears a listing’s and a revision’s coordinates outside -90..90 / -180..180, and the catalogue shows the listing again', async () => {
    const t = await buildTestApp()
    try {
      const agency = await createTenant(t.app)
      const [off, kept] = [await submitProperty(t.app, agency), await submitProperty(t.app, agency)]
      await runInternalCheck(t.app)
      // As a release that took "91" for a latitude left them (the schema, and the check, have
      // held them to range since).
      await t.db.execute(sql`update properties set latitude = 91, longitude = 37.6 where id = ${off.id}::int`)
      await t.db.execute(sql`update properties set latitude = 55.75, longitude = 37.6 where id = ${kept.id}::int`)
      await t.db.execute(sql`
        insert into property_revisions (property_id, tenant_id, fields)
        select id, tenant_id, jsonb_build_object('latitude', 55.7, 'longitude', 200, 'price', 1000000) from properties where id = ${kept.id}::int`)
      await rewindBefore(t, 'coordinates_in_range')

      await migrateDatabase(t.database.handle)

      const rows = await queryRows<{ id: number; latitude: number | null; longitude: number | null }>(
        t.db,
        sql`select id, latitude::float8 as latitude, longitude::float8 as longitude from properties where id in (${off.id}::int, ${kept.id}::int) order by id`,
      )
      assert.deepEqual(
        rows.map((row) => [row.id, row.latitude, row.longitude]),
        [
          [off.id, null, null],
          [kept.id, 55.75, 37.6],
        ],
      )
      const [revision] = await queryRows<{ fields: Record<string, unknown> }>(
        t.db,
        sql`select fields from property_revisions where property_id = ${kept.id}::int`,
      )
      assert.deepEqual(revision?.fields, { latitude: null, longitude: null, price: 1000000 })
      assert.equal((await t.app.inject('/mls/properties')).statusCode, 200, 'the catalogue’s pages show it')
      const shown = await t.app.inject(`/mls/properties/${off.id}`)
      assert.equal(shown.statusCode, 200, shown.body)
      assert.equal(shown.json<{ latitude: number | null }>().latitude, null)
    } finally {
      await t.close()
    }
  })
})

describe('the published time of every published listing (migration 0031)', () => {
  it('gives a published listing without one its last change’s time, then holds every published listing to having one', async () => {
    const t = await buildTestApp()
    try {
      const agency = await createTenant(t.app)
      const listing = await submitProperty(t.app, agency)
      await runInternalCheck(t.app)
      await rewindBefore(t, 'published_has_published_at')
      // As a row written by hand could be before the check existed.
      await t.db.execute(sql`update properties set published_at = null, updated_at = '2026-01-02T03:04:05Z' where id = ${listing.id}::int`)

      await migrateDatabase(t.database.handle)

      const shown = await t.app.inject(`/mls/properties/${listing.id}`)
      assert.equal(shown.statusCode, 200, shown.body)
      assert.equal(shown.json<{ published_at: string }>().published_at, '2026-01-02T03:04:05.000+00:00')
      assert.equal((await t.app.inject('/mls/changes')).statusCode, 200)
      await assert.rejects(t.db.execute(sql`update properties set published_at = null where id = ${listing.id}::int`), (error: Error) =>
        /violates check constraint "properties_published_has_published_at_check"/.test(String((error.cause as Error | undefined)?.message)),
      )
    } finally {
      await t.close()
    }
  })
})

describe('map filters written as every query number is (migration 0032)', () => {
  it('rewrites a stored bbox and near with a plus sign, blanks or a bare point to the same numbers', async () => {
    const t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true' })
    try {
      const agency = await createTenant(t.app)
      const created = await t.app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: agency.headers,
        payload: { url: 'http://127.0.0.1:9/hooks', events: ['mls.new_listing'], filter: { bbox: '37,55,38,56', city_id: 1 } },
      })
      assert.equal(created.statusCode, 201, created.body)
      const { id } = created.json<{ id: number }>()
      await rewindBefore(t, 'map_filters_written_as_query_numbers')
      // As a release that read them loosely stored them.
      await t.db.execute(
        sql`update webhook_subscriptions set filter = jsonb_build_object('bbox', ' +37.5, 55., -.5 ,56e0', 'near', '+55.7, 37.', 'radius_m', 500, 'city_id', 1) where id = ${id}::int`,
      )

      await migrateDatabase(t.database.handle)

      const read = await t.app.inject({ url: `/webhooks/${id}`, headers: agency.headers })
      assert.deepEqual(read.json<{ filter: unknown }>().filter, { bbox: '37.5,55,-0.5,56e0', near: '55.7,37', radius_m: 500, city_id: 1 })
    } finally {
      await t.close()
    }
  })
})

describe('the photos a feed added, marked as its own (migration 0033)', () => {
  it('marks the photos with a source URL of listings a feed keeps, and no other', async () => {
    const t = await buildTestApp()
    try {
      const agency = await createTenant(t.app)
      const [fed, own] = [await submitProperty(t.app, agency), await submitProperty(t.app, agency)]
      const [feed] = await queryRows<{ id: number }>(
        t.db,
        sql`insert into feeds (tenant_id, url, format) values (${agency.tenantId}::int, 'https://crm.example/feed.xml', 'yandex_realty') returning id`,
      )
      await t.db.execute(sql`insert into feed_offers (feed_id, internal_id, property_id, content_digest, last_run_id)
          values (${feed!.id}::int, 'offer-1', ${fed.id}::int, 'digest', 0)`)
      // As stored before: a photo by URL of the feed's listing, one uploaded to it, one by URL of another listing.
      const photo = (propertyId: number, key: string, sourceUrl: string | null) =>
        t.db.execute(sql`insert into property_images (tenant_id, property_id, file_key, thumbnail_key, content_type, width, height, bytes, source_url)
            values (${agency.tenantId}::int, ${propertyId}::int, ${`photos/${key}.jpg`}, ${`photos/${key}.thumb.jpg`}, 'image/jpeg', 10, 10, 100, ${sourceUrl})`)
      await photo(fed.id, 'fed-by-url', 'https://crm.example/1.jpg')
      await photo(fed.id, 'fed-uploaded', null)
      await photo(own.id, 'own-by-url', 'https://agency.example/2.jpg')
      await rewindBefore(t, 'feed_photos_marked')

      await migrateDatabase(t.database.handle)

      const marked = await queryRows<{ file_key: string; added_by_feed: boolean }>(
        t.db,
        sql`select file_key, added_by_feed from property_images order by file_key`,
      )
      assert.deepEqual(
        marked.map((row) => [row.file_key, row.added_by_feed]),
        [
          ['photos/fed-by-url.jpg', true],
          ['photos/fed-uploaded.jpg', false],
          ['photos/own-by-url.jpg', false],
        ],
      )
    } finally {
      await t.close()
    }
  })
})

describe('the claims of feed runs (migration 0037)', () => {
  it('counts a run under way as taken once already, and a finished one as never taken', async () => {
    const t = await buildTestApp()
    try {
      const agency = await createTenant(t.app)
      const feedOf = async (url: string) =>
        (
          await queryRows<{ id: number }>(
            t.db,
            sql`insert into feeds (tenant_id, url, format) values (${agency.tenantId}::int, ${url}, 'yandex_realty') returning id`,
          )
        )[0]!.id
      const [running, finished] = [await feedOf('https://crm.example/a.xml'), await feedOf('https://crm.example/b.xml')]
      await t.db.execute(sql`insert into feed_runs (feed_id, tenant_id, trigger, status) values
          (${running}::int, ${agency.tenantId}::int, 'manual', 'running'), (${finished}::int, ${agency.tenantId}::int, 'manual', 'succeeded')`)
      await rewindBefore(t, 'feed_runs_count_claims')

      await migrateDatabase(t.database.handle)

      const runs = await queryRows<{ feed_id: number; claims: number }>(t.db, sql`select feed_id, claims from feed_runs order by feed_id`)
      assert.deepEqual(
        runs.map((run) => [run.feed_id, run.claims]),
        [
          [running, 1],
          [finished, 0],
        ],
      )
    } finally {
      await t.close()
    }
  })
})

/**
 * Takes a migrated database back to before the migration tagged `…_<name>`, as far as the
 * migrations after it need: their records go, so they run again, and what they add that would
 * not be added twice is dropped.
 */
async function rewindBefore(t: TestApp, name: string): Promise<void> {
  const { entries } = JSON.parse(readFileSync(path.join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string; when: number }[] }
  const from = entries.find((entry) => entry.tag.endsWith(`_${name}`))
  assert.ok(from, `no migration named ${name}`)
  await t.db.execute(sql`delete from drizzle.__drizzle_migrations where created_at >= ${from.when}`)
  for (const entry of entries.filter((entry) => entry.when >= from.when)) {
    const undo = UNDO[entry.tag.replace(/^\d+_/, '')]
    if (undo) await t.db.execute(undo)
  }
}

/** What a migration adds that it would not add twice, taken away so that it can run again. */
const UNDO: Record<string, SQL> = {
  published_has_published_at: sql`alter table properties drop constraint properties_published_has_published_at_check`,
  feed_photos_marked: sql`alter table property_images drop column added_by_feed`,
  feed_runs_count_claims: sql`alter table feed_runs drop column claims`,
}
