import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { utimes } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import S3rver from 's3rver'
import { orphanFilesJob } from '../../src/modules/images/orphan-files.job.js'
import type { PropertyImage } from '../../src/modules/images/images.schemas.js'
import { createStorage, mediaBaseUrl, mediaRoot, S3Storage, type Storage } from '../../src/modules/images/storage.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty } from '../helpers/factories.js'
import { capturedLog, jobContext } from '../helpers/jobs.js'
import { photo, upload } from '../helpers/photos.js'

const HOUR_MS = 3_600_000
const hoursAgo = (hours: number) => new Date(Date.now() - hours * HOUR_MS)
const WARN = 40
const INFO = 30

/** Where a driver keeps a key's bytes on this machine, so a test can set the file's age. */
type FileOfKey = (key: string) => string

async function allKeys(storage: Storage): Promise<string[]> {
  const keys: string[] = []
  for await (const page of storage.list('')) keys.push(...page.map((file) => file.key))
  return keys
}

/**
 * The sweep on one driver, after a crash between storing files and writing their row
 * (simulated by storing files without one), with a photo whose file went missing.
 */
function sweepsOrphans(build: () => Promise<{ t: TestApp; fileOf: FileOfKey }>) {
  let t: TestApp
  let fileOf: FileOfKey
  before(async () => ({ t, fileOf } = await build()))
  after(() => t.close())

  const age = async (key: string, hours: number) => utimes(fileOf(key), hoursAgo(hours), hoursAgo(hours))

  it('removes files no row names once older than ORPHAN_FILE_MIN_AGE, keeps the rest, and reports rows whose file is missing', async () => {
    const agency = await createTenant(t.app)
    const propertyId = (await submitProperty(t.app, agency)).id
    const base = mediaBaseUrl(t.config)
    const keyOf = (url: string) => url.slice(base.length + 1)
    const add = async () => {
      const response = await upload(t.app, agency, { file: await photo('jpeg', 64, 48), fields: { property_id: String(propertyId) } })
      assert.equal(response.statusCode, 201, response.body)
      const image = response.json<PropertyImage>()
      assert.ok(image.thumbnail_url !== undefined)
      return { id: image.id, file: keyOf(image.url), thumbnail: keyOf(image.thumbnail_url) }
    }
    const storage = createStorage(t.config)

    const kept = await add()
    const lost = await add()
    await storage.remove([lost.file])
    // The crash: files stored, the row never written.
    const crashed = { file: 'photos/crashed.jpg', thumbnail: 'photos/crashed-400.jpg' }
    const young = 'photos/young.jpg'
    for (const key of [crashed.file, crashed.thumbnail, young]) await storage.put(key, Buffer.from('not written by an upload'), 'image/jpeg')
    for (const key of [kept.file, kept.thumbnail, lost.thumbnail, crashed.file, crashed.thumbnail]) await age(key, 2)
    await t.db.execute(sql`update property_images set created_at = now() - interval '2 hours'`)

    const { log, lines } = capturedLog()
    assert.equal(await orphanFilesJob.runOnce(jobContext(t, log)), 0)

    assert.deepEqual((await allKeys(storage)).sort(), [kept.file, kept.thumbnail, lost.thumbnail, young].sort())
    const removed = lines.filter((line) => line.level === INFO && line.msg.startsWith('removed photo files'))
    assert.deepEqual(
      removed.map((line) => line.filesRemoved),
      [2],
    )
    const warnings = lines.filter((line) => line.level === WARN)
    assert.equal(warnings.length, 1)
    assert.deepEqual(warnings[0]!.imageIds, [lost.id])
    assert.deepEqual(warnings[0]!.keys, [lost.file])
    // Reported, not deleted: both photos are still there.
    for (const id of [kept.id, lost.id]) {
      assert.equal((await t.app.inject({ url: `/property-images/${id}`, headers: agency.headers })).statusCode, 200)
    }

    // A second sweep finds nothing to remove, and the same missing file.
    const again = await t.app.services.images.sweepOrphanFiles(hoursAgo(1))
    assert.deepEqual(again, { filesListed: 4, filesRemoved: 0, missingFiles: [{ imageId: lost.id, key: lost.file }], missingFileCount: 1 })
    if (storage instanceof S3Storage) storage.destroy()
  })

  it('leaves files of a row written after the cut-off unreported', async () => {
    const sweep = await t.app.services.images.sweepOrphanFiles(hoursAgo(3))
    assert.equal(sweep.filesRemoved, 0)
    assert.equal(sweep.missingFileCount, 0)
  })
}

describe('the orphan-files sweep, local storage', () => {
  sweepsOrphans(async () => {
    const t = await buildTestApp()
    return { t, fileOf: (key) => path.join(mediaRoot(t.config), ...key.split('/')) }
  })
})

describe('the orphan-files sweep, S3-compatible storage', () => {
  let s3: S3rver
  let directory: string
  const bucket = 'mls-photos'
  before(async () => {
    directory = mkdtempSync(path.join(tmpdir(), 'mls-s3-'))
    s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] })
  })
  after(async () => {
    await s3.close()
    rmSync(directory, { recursive: true, force: true })
  })

  sweepsOrphans(async () => {
    const { port } = await s3.run()
    const endpoint = `http://127.0.0.1:${port}`
    const t = await buildTestApp({
      STORAGE_DRIVER: 's3',
      S3_BUCKET: bucket,
      S3_ENDPOINT: endpoint,
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_PUBLIC_URL: `${endpoint}/${bucket}`,
    })
    // s3rver keeps an object's bytes in `<key>._S3rver_object` and lists its mtime as LastModified.
    return { t, fileOf: (key) => path.join(directory, bucket, ...key.split('/')) + '._S3rver_object' }
  })
})
