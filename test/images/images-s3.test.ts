import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import S3rver from 's3rver'
import sharp from 'sharp'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { jpegWithGpsAndOrientation, photo, upload } from '../helpers/photos.js'
import type { StoredImage } from '../helpers/responses.js'

/**
 * STORAGE_DRIVER=s3 against a real S3-compatible server (s3rver, speaking the S3 HTTP API on
 * loopback), through the AWS SDK as in production.
 */
describe('photos in S3-compatible storage', () => {
  let s3: S3rver
  let directory: string
  let endpoint: string
  let t: TestApp
  let agency: Tenant
  const bucket = 'mls-photos'

  before(async () => {
    directory = mkdtempSync(path.join(tmpdir(), 'mls-s3-'))
    s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] })
    const { port } = await s3.run()
    endpoint = `http://127.0.0.1:${port}`
    t = await buildTestApp({
      STORAGE_DRIVER: 's3',
      S3_BUCKET: bucket,
      S3_ENDPOINT: endpoint,
      S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_PUBLIC_URL: `${endpoint}/${bucket}`,
    })
    agency = await createTenant(t.app, { email: 's3@agency.example' })
  })
  after(async () => {
    await t.close()
    await s3.close()
    rmSync(directory, { recursive: true, force: true })
  })

  const fetchObject = (url: string) => fetch(url)

  it('stores the re-encoded photo and its thumbnail in the bucket, at URLs under S3_PUBLIC_URL', async () => {
    const propertyId = (await submitProperty(t.app, agency)).id
    const response = await upload(t.app, agency, { file: await jpegWithGpsAndOrientation(), fields: { property_id: String(propertyId) } })
    assert.equal(response.statusCode, 201, response.body)
    const image = response.json<StoredImage>()
    assert.ok(image.url.startsWith(`${endpoint}/${bucket}/photos/`), image.url)

    const stored = await fetchObject(image.url)
    assert.equal(stored.status, 200)
    assert.equal(stored.headers.get('content-type'), 'image/jpeg')
    assert.equal(stored.headers.get('cache-control'), 'public, max-age=31536000, immutable')
    const bytes = Buffer.from(await stored.arrayBuffer())
    assert.equal((await sharp(bytes).metadata()).exif, undefined)
    assert.equal((await fetchObject(image.thumbnail_url)).status, 200)
    // The local driver's route is not there: the files are the bucket's.
    assert.equal((await t.app.inject(`/media/${new URL(image.url).pathname.split('/photos/')[1]}`)).statusCode, 404)
  })

  it('removes both files from the bucket when the photo, or its property, is deleted', async () => {
    const propertyId = (await submitProperty(t.app, agency)).id
    const first = (await upload(t.app, agency, { file: await photo('png', 60, 60), fields: { property_id: String(propertyId) } })).json<StoredImage>()
    const second = (await upload(t.app, agency, { file: await photo('webp', 60, 60), fields: { property_id: String(propertyId) } })).json<StoredImage>()
    for (const url of [first.url, first.thumbnail_url, second.url, second.thumbnail_url]) assert.equal((await fetchObject(url)).status, 200)

    assert.equal((await t.app.inject({ method: 'DELETE', url: `/property-images/${first.id}`, headers: agency.headers })).statusCode, 204)
    for (const url of [first.url, first.thumbnail_url]) assert.equal((await fetchObject(url)).status, 404)
    assert.equal((await fetchObject(second.url)).status, 200)

    assert.equal((await t.app.inject({ method: 'DELETE', url: `/properties/${propertyId}`, headers: agency.headers })).statusCode, 204)
    for (const url of [second.url, second.thumbnail_url]) assert.equal((await fetchObject(url)).status, 404)
  })
})
