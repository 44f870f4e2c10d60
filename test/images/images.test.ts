import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import sharp from 'sharp'
import { openDatabase, queryRows } from '../../src/db/client.js'
import type { CatalogueDetail } from '../../src/modules/catalogue/catalogue.schemas.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { engine } from '../helpers/database.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import { jpegWithGpsAndOrientation, photo, pngBomb, pngChunk, upload } from '../helpers/photos.js'
import type { CataloguePage, ErrorBody, StoredImage, ValidationErrorBody } from '../helpers/responses.js'
import { waitFor } from '../helpers/webhooks.js'

/** Every file the local driver holds, relative to DATA_DIR/media. */
function storedFiles(t: TestApp): string[] {
  const root = path.join(t.config.dataDir, 'media')
  try {
    return readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
      .sort()
  } catch {
    return []
  }
}

const mediaPath = (url: string) => new URL(url).pathname

describe('photos of a property', () => {
  let t: TestApp
  let agency: Tenant
  let rival: Tenant
  let propertyId: number
  let rivalPropertyId: number

  before(async () => {
    t = await buildTestApp({ IMAGE_MAX_BYTES: String(2 * 1024 * 1024), IMAGE_MAX_PER_PROPERTY: '3' })
    agency = await createTenant(t.app, { email: 'photos@agency.example' })
    rival = await createTenant(t.app, { email: 'rival@agency.example' })
    propertyId = (await submitProperty(t.app, agency)).id
    rivalPropertyId = (await submitProperty(t.app, rival)).id
  })
  after(() => t.close())

  const uploadTo = async (property: number, file: Buffer, fields: Record<string, string> = {}, tenant = agency) =>
    upload(t.app, tenant, { file, fields: { property_id: String(property), ...fields } })

  it('uploads JPEG, PNG and WebP photos, re-encoded in their format, with a 400 px thumbnail, served from /media', async () => {
    for (const [format, contentType] of [
      ['jpeg', 'image/jpeg'],
      ['png', 'image/png'],
      ['webp', 'image/webp'],
    ] as const) {
      const response = await uploadTo(propertyId, await photo(format, 800, 600), { sort_order: '2' })
      assert.equal(response.statusCode, 201, response.body)
      const image = response.json<StoredImage>()
      assert.equal(response.headers.location, `/property-images/${image.id}`)
      assert.deepEqual(Object.keys(image).sort(), ['created_at', 'height', 'id', 'property_id', 'sort_order', 'thumbnail_url', 'url', 'width'])
      assert.equal(image.property_id, propertyId)
      assert.equal(image.sort_order, 2)
      assert.equal(image.width, 800)
      assert.equal(image.height, 600)
      assert.match(image.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.match(image.url, /^http:\/\/mls\.test\/media\/photos\/[\w-]{22}\.(jpg|png|webp)$/)

      const served = await t.app.inject(mediaPath(image.url))
      assert.equal(served.statusCode, 200)
      assert.equal(served.headers['content-type'], contentType)
      assert.equal(served.headers['cache-control'], 'public, max-age=31536000, immutable')
      assert.equal(served.headers['x-content-type-options'], 'nosniff')
      assert.equal((await sharp(served.rawPayload).metadata()).format, format)

      const thumbnail = await t.app.inject(mediaPath(image.thumbnail_url))
      assert.equal(thumbnail.statusCode, 200)
      const thumbnailMeta = await sharp(thumbnail.rawPayload).metadata()
      assert.equal(thumbnailMeta.width, 400)
      assert.equal(thumbnailMeta.height, 300)
    }
  })

  it('defaults sort_order to 0', async () => {
    const other = (await submitProperty(t.app, agency)).id
    const response = await uploadTo(other, await photo('jpeg'))
    assert.equal(response.statusCode, 201, response.body)
    assert.equal(response.json<StoredImage>().sort_order, 0)
  })

  it('strips metadata (camera, GPS) and applies the EXIF orientation', async () => {
    const original = await jpegWithGpsAndOrientation()
    assert.ok(original.includes(Buffer.from('SecretCam')), 'the fixture carries EXIF')
    assert.ok((await sharp(original).metadata()).exif, 'the fixture carries EXIF')
    const other = (await submitProperty(t.app, agency)).id
    const response = await uploadTo(other, original)
    assert.equal(response.statusCode, 201, response.body)
    const image = response.json<StoredImage>()
    assert.equal(image.width, 32, 'turned upright')
    assert.equal(image.height, 64)
    for (const url of [image.url, image.thumbnail_url]) {
      const stored = (await t.app.inject(mediaPath(url))).rawPayload
      const metadata = await sharp(stored).metadata()
      assert.equal(metadata.exif, undefined)
      assert.equal(metadata.orientation, undefined)
      assert.ok(!stored.includes(Buffer.from('SecretCam')))
    }
  })

  it('decides the type from the bytes: a page named .jpg, or a GIF, is a 415 and nothing is stored', async () => {
    const before = storedFiles(t)
    const page = await upload(t.app, agency, {
      file: Buffer.from('<!doctype html><html><body>not a photo</body></html>'.repeat(200)),
      filename: 'photo.jpg',
      contentType: 'image/jpeg',
      fields: { property_id: String(propertyId) },
    })
    assert.equal(page.statusCode, 415, page.body)
    assert.match(page.json<ErrorBody>().detail, /Only JPEG, PNG and WebP/)
    const gif = await upload(t.app, agency, {
      file: await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } })
        .gif()
        .toBuffer(),
      filename: 'photo.png',
      contentType: 'image/png',
      fields: { property_id: String(propertyId) },
    })
    assert.equal(gif.statusCode, 415, gif.body)
    assert.match(gif.json<ErrorBody>().detail, /image\/gif/)
    assert.deepEqual(storedFiles(t), before)
  })

  it('refuses a decompression bomb from its header (422), without decoding it', async () => {
    const before = storedFiles(t)
    const bomb = pngBomb()
    assert.ok(bomb.length < 100)
    const fresh = (await submitProperty(t.app, agency)).id
    const response = await upload(t.app, agency, { file: bomb, filename: 'bomb.png', contentType: 'image/png', fields: { property_id: String(fresh) } })
    assert.equal(response.statusCode, 422, response.body)
    assert.match(response.json<ErrorBody>().detail, /100000×100000 pixels; at most 50 megapixels/)
    assert.deepEqual(storedFiles(t), before)
  })

  it('cuts off an upload over IMAGE_MAX_BYTES with a 413, leaving no file or row', async () => {
    const before = storedFiles(t)
    const [rowsBefore] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from property_images`)
    // A valid JPEG start followed by 3 MiB: the type passes, the size does not.
    const huge = Buffer.concat([await photo('jpeg', 64, 64), Buffer.alloc(3 * 1024 * 1024, 1)])
    const response = await uploadTo(propertyId, huge)
    assert.equal(response.statusCode, 413, response.body)
    assert.match(response.json<ErrorBody>().detail, /larger than 2 MiB/)
    assert.deepEqual(storedFiles(t), before)
    const [rowsAfter] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from property_images`)
    assert.equal(rowsAfter!.n, rowsBefore!.n)
  })

  it('refuses a damaged photo with a 422, cut short or with a byte changed in its pixels, storing nothing', async () => {
    const jpeg = await photo('jpeg')
    // A byte flipped in a PNG's compressed pixels, as in a bad transfer: its header still reads, its checksum fails.
    const png = Buffer.from(await photo('png', 300, 200))
    const pixels = png.indexOf(Buffer.from('IDAT'))
    png[pixels + 100] = png[pixels + 100]! ^ 0xff
    assert.equal((await sharp(png).metadata()).format, 'png')
    const property = (await submitProperty(t.app, agency)).id
    const before = storedFiles(t)
    // A PNG cut short by its last 16 bytes: every pixel there, its last checksum and its end gone.
    const cut = (await photo('png', 300, 200)).subarray(0, -16)
    for (const damaged of [jpeg.subarray(0, 5000), png, cut]) {
      const response = await uploadTo(property, damaged)
      assert.equal(response.statusCode, 422, response.body)
      assert.match(response.json<ErrorBody>().detail, /damaged or truncated/)
    }
    assert.deepEqual(storedFiles(t), before)
  })

  it('holds at most IMAGE_MAX_PER_PROPERTY photos per property (422), leaving no orphan file', async () => {
    const full = (await submitProperty(t.app, agency)).id
    for (let i = 0; i < 3; i++) assert.equal((await uploadTo(full, await photo('jpeg', 100, 100))).statusCode, 201)
    const before = storedFiles(t)
    const response = await uploadTo(full, await photo('jpeg', 100, 100))
    assert.equal(response.statusCode, 422, response.body)
    assert.match(response.json<ErrorBody>().detail, /already has 3 photos/)
    assert.deepEqual(storedFiles(t), before)
  })

  it('validates the form: property_id, sort_order, file, unknown fields; a JSON body is a 415', async () => {
    const jpeg = await photo('jpeg', 50, 50)
    const missing = await upload(t.app, agency, { file: jpeg })
    assert.equal(missing.statusCode, 422)
    assert.deepEqual(
      missing.json<ValidationErrorBody>().errors.map((e) => e.loc),
      [['body', 'property_id']],
    )

    const bad = await upload(t.app, agency, { fields: { property_id: 'abc', sort_order: '1.5', owner: 'x' } })
    assert.equal(bad.statusCode, 422)
    assert.deepEqual(
      bad
        .json<ValidationErrorBody>()
        .errors.map((e) => e.loc.join('.'))
        .sort(),
      ['body.file', 'body.owner', 'body.property_id', 'body.sort_order'],
    )

    const json = await t.app.inject({ method: 'POST', url: '/property-images/upload', headers: agency.headers, payload: { property_id: propertyId } })
    assert.equal(json.statusCode, 415)
    assert.match(json.json<ErrorBody>().detail, /multipart\/form-data/)
  })

  it('says what is wrong with a form that cannot be read: no boundary, cut short, too many parts, a reserved name', async () => {
    const send = (contentType: string, payload: string | Buffer) =>
      t.app.inject({ method: 'POST', url: '/property-images/upload', headers: { ...agency.headers, 'content-type': contentType }, payload })
    for (const contentType of ['multipart/form-data', 'multipart/form-data; charset=utf-8', `multipart/form-data; boundary=${'b'.repeat(71)}`]) {
      const response = await send(contentType, 'x')
      assert.equal(response.statusCode, 400, `${contentType}: ${response.body}`)
      assert.match(response.json<ErrorBody>().detail, /^The Content-Type multipart\/form-data needs a boundary of 1 to 70 characters/)
    }

    const part = (name: string, value: string, file = false) =>
      `--cut\r\nContent-Disposition: form-data; name="${name}"${file ? '; filename="photo.jpg"\r\nContent-Type: image/jpeg' : ''}\r\n\r\n${value}\r\n`
    const jpeg = (await photo('jpeg', 50, 50)).toString('latin1')
    const cutShort = await send(
      'multipart/form-data; boundary=cut',
      `${part('property_id', String(propertyId))}--cut\r\nContent-Disposition: form-data; name="file"; filename="photo.jpg"\r\n\r\n${jpeg.slice(0, 300)}`,
    )
    assert.equal(cutShort.statusCode, 400, cutShort.body)
    assert.equal(cutShort.json<ErrorBody>().detail, 'The multipart/form-data body ends inside a part, before its closing boundary.')

    const twoFiles = await send('multipart/form-data; boundary=cut', Buffer.from(`${part('file', jpeg, true)}${part('file', jpeg, true)}--cut--\r\n`, 'latin1'))
    assert.equal(twoFiles.statusCode, 422, twoFiles.body)
    assert.match(twoFiles.json<ErrorBody>().detail, /more parts than it takes/)

    for (const name of ['__proto__', 'constructor']) {
      const reserved = await send('multipart/form-data; boundary=cut', `${part(name, '1')}--cut--\r\n`)
      assert.equal(reserved.statusCode, 422, `${name}: ${reserved.body}`)
      assert.match(reserved.json<ErrorBody>().detail, /__proto__, constructor/)
    }
  })

  it('needs a valid key', async () => {
    const anonymous = await upload(t.app, undefined, { file: await photo('jpeg', 50, 50), fields: { property_id: String(propertyId) } })
    assert.equal(anonymous.statusCode, 401)
    assert.deepEqual(anonymous.json<ErrorBody>(), { detail: 'Invalid or missing API key' })
    for (const url of ['/property-images', '/property-images/1']) {
      const response = await t.app.inject({ url, headers: { 'x-api-key': 'mls_live_wrong' } })
      assert.equal(response.statusCode, 401)
      assert.deepEqual(response.json<ErrorBody>(), { detail: 'Invalid or missing API key' })
    }
  })

  it('refuses a photo for another tenant’s property (404) before processing, storing nothing', async () => {
    const before = storedFiles(t)
    const response = await uploadTo(rivalPropertyId, await photo('jpeg', 50, 50))
    assert.equal(response.statusCode, 404)
    assert.deepEqual(response.json<ErrorBody>(), { detail: 'Property not found' })
    assert.deepEqual(storedFiles(t), before)
    const [row] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from property_images where property_id = ${rivalPropertyId}`)
    assert.equal(row!.n, 0)
  })

  it('lists the caller’s photos only, as a plain array by property, sort_order, id; filters by property_id', async () => {
    const p1 = (await submitProperty(t.app, agency)).id
    const p2 = (await submitProperty(t.app, agency)).id
    const second = (await uploadTo(p1, await photo('png', 40, 40), { sort_order: '5' })).json<StoredImage>()
    const first = (await uploadTo(p1, await photo('png', 40, 40), { sort_order: '1' })).json<StoredImage>()
    const other = (await uploadTo(p2, await photo('png', 40, 40))).json<StoredImage>()
    await uploadTo(rivalPropertyId, await photo('png', 40, 40), {}, rival)

    const all = await t.app.inject({ url: '/property-images', headers: agency.headers })
    assert.equal(all.statusCode, 200)
    const images = all.json<StoredImage[]>()
    assert.ok(Array.isArray(images))
    assert.ok(images.every((image) => image.property_id !== rivalPropertyId))
    const order = images.map((image) => [image.property_id, image.sort_order, image.id])
    assert.deepEqual(
      order,
      [...order].sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!),
    )

    const filtered = await t.app.inject({ url: `/property-images?property_id=${p1}`, headers: agency.headers })
    assert.deepEqual(
      filtered.json<StoredImage[]>().map((image) => image.id),
      [first.id, second.id],
    )
    assert.ok(!filtered.json<StoredImage[]>().some((image) => image.id === other.id))

    const rivals = await t.app.inject({ url: `/property-images?property_id=${rivalPropertyId}`, headers: agency.headers })
    assert.deepEqual(rivals.json<StoredImage[]>(), [])
    const bad = await t.app.inject({ url: '/property-images?property_id=abc', headers: agency.headers })
    assert.equal(bad.statusCode, 422)
  })

  it('gets, re-orders and deletes one photo (its files too); another tenant’s photo is a 404 and stays', async () => {
    const created = (await uploadTo((await submitProperty(t.app, agency)).id, await photo('webp', 60, 60))).json<StoredImage>()
    const got = await t.app.inject({ url: `/property-images/${created.id}`, headers: agency.headers })
    assert.equal(got.statusCode, 200)
    assert.deepEqual(got.json<StoredImage>(), created)

    const moved = await t.app.inject({ method: 'PUT', url: `/property-images/${created.id}`, headers: agency.headers, payload: { sort_order: 7 } })
    assert.equal(moved.statusCode, 200)
    assert.equal(moved.json<StoredImage>().sort_order, 7)

    const invalid = await t.app.inject({
      method: 'PUT',
      url: `/property-images/${created.id}`,
      headers: agency.headers,
      payload: { sort_order: 'first', url: 'x' },
    })
    assert.equal(invalid.statusCode, 422)

    for (const request of [
      { method: 'GET' as const, url: `/property-images/${created.id}` },
      { method: 'PUT' as const, url: `/property-images/${created.id}`, payload: { sort_order: 1 } },
      { method: 'DELETE' as const, url: `/property-images/${created.id}` },
    ]) {
      const response = await t.app.inject({ ...request, headers: rival.headers })
      assert.equal(response.statusCode, 404, `${request.method} of another tenant's photo`)
      assert.deepEqual(response.json<ErrorBody>(), { detail: 'Image not found' })
    }
    assert.equal((await t.app.inject({ url: `/property-images/${created.id}`, headers: agency.headers })).json<StoredImage>().sort_order, 7)
    assert.equal((await t.app.inject({ url: '/property-images/abc', headers: agency.headers })).statusCode, 422)

    const files = [created.url, created.thumbnail_url].map((url) => mediaPath(url).replace('/media/', ''))
    assert.ok(files.every((file) => storedFiles(t).includes(file)))
    const deleted = await t.app.inject({ method: 'DELETE', url: `/property-images/${created.id}`, headers: agency.headers })
    assert.equal(deleted.statusCode, 204)
    assert.equal((await t.app.inject({ url: `/property-images/${created.id}`, headers: agency.headers })).statusCode, 404)
    assert.ok(files.every((file) => !storedFiles(t).includes(file)))
    assert.equal((await t.app.inject(mediaPath(created.url))).statusCode, 404)
  })

  it('shows the photos in the tenant’s property and removes them with the property', async () => {
    const id = (await submitProperty(t.app, agency)).id
    const image = (await uploadTo(id, await photo('jpeg', 80, 60))).json<StoredImage>()
    const property = await t.app.inject({ url: `/properties/${id}`, headers: agency.headers })
    assert.deepEqual(property.json<Property>().images, [image])

    const deleted = await t.app.inject({ method: 'DELETE', url: `/properties/${id}`, headers: agency.headers })
    assert.equal(deleted.statusCode, 204)
    const files = storedFiles(t)
    assert.ok(!files.includes(mediaPath(image.url).replace('/media/', '')))
    assert.ok(!files.includes(mediaPath(image.thumbnail_url).replace('/media/', '')))
    const [row] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from property_images where id = ${image.id}`)
    assert.equal(row!.n, 0)
  })

  it('puts the first photo’s thumbnail in the catalogue and the photos in the catalogue detail', async () => {
    const id = (await submitProperty(t.app, agency)).id
    const later = (await uploadTo(id, await photo('jpeg', 80, 60), { sort_order: '2' })).json<StoredImage>()
    const cover = (await uploadTo(id, await photo('jpeg', 80, 60), { sort_order: '1' })).json<StoredImage>()
    const bare = (await submitProperty(t.app, agency)).id
    await runInternalCheck(t.app)

    const page = (await t.app.inject('/mls/properties')).json<CataloguePage>()
    assert.equal(page.items.find((item) => item.id === id)!.thumbnail_url, cover.thumbnail_url)
    assert.equal(page.items.find((item) => item.id === bare)!.thumbnail_url, null)

    const detail = (await t.app.inject(`/mls/properties/${id}`)).json<CatalogueDetail>()
    assert.equal(detail.thumbnail_url, cover.thumbnail_url)
    assert.deepEqual(detail.images, [cover.url, later.url])

    const [event] = await queryRows<{ data: { thumbnail_url: string } }>(
      t.db,
      sql`select data from events where type = 'mls.new_listing' and (data->>'id')::int = ${id}`,
    )
    assert.equal(event!.data.thumbnail_url, cover.thumbnail_url)
  })

  it('serves no path outside the media folder: a traversal or a dot file is as missing as any file (404, never 403)', async () => {
    for (const url of [
      '/media/../secret-key',
      '/media/%2e%2e/secret-key',
      '/media/photos/',
      '/media/.hidden',
      '/media/photos/..%2f..%2fpglite',
      '/media/..%2fsecret-key',
    ]) {
      const response = await t.app.inject(url)
      assert.equal(response.statusCode, 404, `${url}: ${response.body}`)
      assert.match(response.json<ErrorBody>().detail, /^There is no (file at|GET) /, url)
    }
  })

  it('answers a deleted photo’s file with a 404, and a range past a file’s end with its length', async () => {
    const property = (await submitProperty(t.app, agency)).id
    const image = (await uploadTo(property, await photo('png', 120, 80))).json<StoredImage>()
    const path = new URL(image.url).pathname
    const size = (await t.app.inject(path)).rawPayload.length
    const pastTheEnd = await t.app.inject({ url: path, headers: { range: `bytes=${size + 1000}-` } })
    assert.equal(pastTheEnd.statusCode, 416)
    assert.equal(pastTheEnd.headers['content-range'], `bytes */${size}`)
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/property-images/${image.id}`, headers: agency.headers })).statusCode, 204)
    const gone = await t.app.inject(path)
    assert.equal(gone.statusCode, 404)
    assert.deepEqual(gone.json<ErrorBody>(), { detail: `There is no file at ${path}: a deleted photo's files are removed with it.` })
  })
})

async function pixel(image: Buffer, options: sharp.SharpOptions = {}): Promise<number[]> {
  const { data } = await sharp(image, options).extract({ left: 10, top: 10, width: 1, height: 1 }).raw().toBuffer({ resolveWithObject: true })
  return [...data.subarray(0, 3)]
}
const near = (actual: number[], expected: number[], tolerance: number) => actual.every((value, i) => Math.abs(value - expected[i]!) <= tolerance)

describe('photos at the edges of what the docs promise', () => {
  let t: TestApp
  let agency: Tenant
  let propertyId: number

  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app, { email: 'edges@photos.example' })
    propertyId = (await submitProperty(t.app, agency)).id
  })
  after(() => t.close())

  it('converts a 16-bit PNG with a Display P3 profile to sRGB, as it does an 8-bit one', async () => {
    // rgb(200, 100, 50) in sRGB, written with the P3 profile (other numbers in the file).
    const original = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 200, g: 100, b: 50 } } })
      .withIccProfile('p3')
      .toColourspace('rgb16')
      .png()
      .toBuffer()
    assert.ok((await sharp(original).metadata()).icc, 'the fixture carries its profile')
    assert.ok(!near(await pixel(original, { ignoreIcc: true }), [200, 100, 50], 8), 'the fixture’s own numbers are not the sRGB ones')
    const response = await upload(t.app, agency, { file: original, contentType: 'image/png', filename: 'p3.png', fields: { property_id: String(propertyId) } })
    assert.equal(response.statusCode, 201, response.body)
    const image = response.json<StoredImage>()
    for (const url of [image.url, image.thumbnail_url]) {
      const stored = (await t.app.inject(new URL(url).pathname)).rawPayload
      assert.equal((await sharp(stored).metadata()).icc, undefined)
      const colour = await pixel(stored, { ignoreIcc: true })
      assert.ok(near(colour, [200, 100, 50], 4), `stored as rgb(${colour.join(', ')}), in sRGB rgb(200, 100, 50)`)
    }
  })

  it('accepts a PNG that carries an animation control chunk (APNG) as the PNG it is', async () => {
    const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#36c' } })
      .png()
      .toBuffer()
    const afterHeader = 8 + 25 // signature, IHDR
    const control = Buffer.alloc(8)
    control.writeUInt32BE(1, 0) // one frame
    control.writeUInt32BE(0, 4)
    const apng = Buffer.concat([png.subarray(0, afterHeader), pngChunk('acTL', control), png.subarray(afterHeader)])
    assert.equal((await sharp(apng).metadata()).format, 'png', 'a PNG decoder reads it as a PNG')
    const response = await upload(t.app, agency, { file: apng, contentType: 'image/png', filename: 'a.png', fields: { property_id: String(propertyId) } })
    assert.equal(response.statusCode, 201, response.body)
  })

  it('keeps the photos of a closed listing as they are: adding, re-ordering or deleting one is a 409, as a PATCH is', async () => {
    const listing = await submitProperty(t.app, agency)
    const kept = (await upload(t.app, agency, { file: await photo('jpeg', 80, 60), fields: { property_id: String(listing.id) } })).json<StoredImage>()
    await runInternalCheck(t.app)
    const closed = await t.app.inject({ method: 'POST', url: `/properties/${listing.id}/status`, headers: agency.headers, payload: { status_id: 5 } })
    assert.equal(closed.statusCode, 200, closed.body)

    const refusals = [
      await upload(t.app, agency, { file: await photo('jpeg', 80, 60), fields: { property_id: String(listing.id) } }),
      await t.app.inject({ method: 'PUT', url: `/property-images/${kept.id}`, headers: agency.headers, payload: { sort_order: 9 } }),
      await t.app.inject({ method: 'DELETE', url: `/property-images/${kept.id}`, headers: agency.headers }),
    ]
    for (const response of refusals) {
      assert.equal(response.statusCode, 409, response.body)
      assert.deepEqual(response.json<ErrorBody>(), { detail: 'This listing’s deal is closed; it can no longer be changed.' })
    }
    const photos = await t.app.inject({ url: `/property-images?property_id=${listing.id}`, headers: agency.headers })
    assert.deepEqual(photos.json<StoredImage[]>(), [kept])
  })

  it('does not silently store another sort_order than the one sent (a long zero-padded number)', async () => {
    const sent = `${'0'.repeat(70)}5`
    const response = await upload(t.app, agency, { file: await photo('jpeg', 80, 60), fields: { property_id: String(propertyId), sort_order: sent } })
    if (response.statusCode === 201) assert.equal(response.json<StoredImage>().sort_order, 5, 'the number sent is 5')
    else assert.equal(response.statusCode, 422, response.body)
  })

  it('tells a client that uploads with a non-multipart type to send multipart/form-data, not JSON', async () => {
    for (const contentType of ['application/octet-stream', 'image/jpeg', 'multipart/mixed; boundary=abc']) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/property-images/upload',
        headers: { ...agency.headers, 'content-type': contentType },
        payload: await photo('jpeg', 80, 60),
      })
      assert.equal(response.statusCode, 415, contentType)
      const { detail } = response.json<ErrorBody>()
      assert.match(detail, /multipart\/form-data/, `${contentType}: ${detail}`)
      assert.doesNotMatch(detail, /application\/json/, `${contentType}: ${detail}`)
    }
  })
})

describe('a photo whose listing is deleted while its change waits for the listing', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app, { email: 'photo-race@agency.example' })
  })
  after(() => t.close())

  for (const method of ['PUT', 'DELETE'] as const) {
    it(
      `answers the ${method} with the photo’s 404, as a GET of it answers then`,
      { skip: engine === 'pglite' && 'needs two transactions at once (PGlite runs one at a time)' },
      async () => {
        const { id: propertyId } = await submitProperty(t.app, agency)
        const uploaded = await upload(t.app, agency, { file: await photo('jpeg', 120, 90), fields: { property_id: String(propertyId) } })
        assert.equal(uploaded.statusCode, 201, uploaded.body)
        const image = uploaded.json<StoredImage>()
        // Another session deletes the listing, its photos' rows first, while the request waits for the listing's lock.
        const session = await openDatabase({ databaseUrl: t.database.url, pgliteDir: undefined, poolSize: 2 })
        let release!: () => void
        const released = new Promise<void>((resolve) => (release = resolve))
        let holding!: () => void
        const rowHeld = new Promise<void>((resolve) => (holding = resolve))
        const deletion = session.db.transaction(async (tx) => {
          await tx.execute(sql`select id from properties where id = ${propertyId}::int for update`)
          holding()
          await released
          await tx.execute(sql`delete from property_images where property_id = ${propertyId}::int`)
          await tx.execute(sql`delete from properties where id = ${propertyId}::int`)
        })
        try {
          await rowHeld
          const request = t.app.inject({
            method,
            url: `/property-images/${image.id}`,
            headers: agency.headers,
            ...(method === 'PUT' ? { payload: { sort_order: 7 } } : {}),
          })
          await waitFor(async () => {
            const [row] = await queryRows<{ waiting: number }>(
              session.db,
              sql`select count(*)::int as waiting from pg_stat_activity
                  where datname = current_database() and wait_event_type = 'Lock' and query ilike '%from "properties"%for update%'`,
            )
            return row!.waiting > 0
          })
          release()
          await deletion
          const response = await request
          assert.equal(response.statusCode, 404, response.body)
          assert.equal(response.json<ErrorBody>().detail, 'Image not found')
          const shown = await t.app.inject({ url: `/property-images/${image.id}`, headers: agency.headers })
          assert.equal(shown.json<ErrorBody>().detail, 'Image not found')
        } finally {
          release()
          await deletion.catch(() => {})
          await session.close()
        }
      },
    )
  }
})
