import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import S3rver from 's3rver'
import sharp from 'sharp'
import { queryRows } from '../../src/db/client.js'
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

/**
 * A photo or a listing deleted while the storage fails its deletes (an S3 outage): the deletion
 * has committed, so it is answered as done; the files are the hourly orphan sweep's.
 */
describe('photos deleted while S3 fails its deletes', () => {
  let s3: Server
  let t: TestApp
  let agency: Tenant

  before(async () => {
    // Takes uploads; answers every other request 503, as S3 does when it is overloaded.
    s3 = createServer((request, response) => {
      request.resume()
      request.on('end', () => {
        if (request.method === 'PUT') response.writeHead(200, { etag: '"stored"' }).end()
        else response.writeHead(503, { 'content-type': 'application/xml' }).end('<?xml version="1.0"?><Error><Code>ServiceUnavailable</Code></Error>')
      })
    })
    s3.listen(0, '127.0.0.1')
    await once(s3, 'listening')
    const endpoint = `http://127.0.0.1:${(s3.address() as AddressInfo).port}`
    t = await buildTestApp({
      STORAGE_DRIVER: 's3',
      S3_BUCKET: 'mls-photos',
      S3_ENDPOINT: endpoint,
      S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: 'key',
      S3_SECRET_ACCESS_KEY: 'secret',
      S3_PUBLIC_URL: `${endpoint}/mls-photos`,
    })
    agency = await createTenant(t.app, { email: 's3-failing@agency.example' })
  })
  after(async () => {
    await t.close()
    s3.closeAllConnections()
    s3.close()
  })

  const count = async (table: 'property_images' | 'properties', id: number) =>
    (await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from ${sql.identifier(table)} where id = ${id}`))[0]!.n

  it('answers DELETE of a photo 204: it is deleted', async () => {
    const propertyId = (await submitProperty(t.app, agency)).id
    const created = await upload(t.app, agency, { file: await photo('jpeg', 100, 80), fields: { property_id: String(propertyId) } })
    assert.equal(created.statusCode, 201, created.body)
    const image = created.json<StoredImage>()
    const response = await t.app.inject({ method: 'DELETE', url: `/property-images/${image.id}`, headers: agency.headers })
    assert.equal(response.statusCode, 204, response.body)
    assert.equal(await count('property_images', image.id), 0)
  })

  it('answers DELETE of a listing with photos 204: it is deleted', async () => {
    const propertyId = (await submitProperty(t.app, agency)).id
    const created = await upload(t.app, agency, { file: await photo('jpeg', 100, 80), fields: { property_id: String(propertyId) } })
    assert.equal(created.statusCode, 201, created.body)
    const response = await t.app.inject({ method: 'DELETE', url: `/properties/${propertyId}`, headers: agency.headers })
    assert.equal(response.statusCode, 204, response.body)
    assert.equal(await count('properties', propertyId), 0)
  })
})
