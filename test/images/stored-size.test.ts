import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import sharp from 'sharp'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { photo, upload } from '../helpers/photos.js'
import type { StoredImage } from '../helpers/responses.js'

/** The limit these tests set: small, so their photos are quick to make. */
const MAX_EDGE = 1000
/** Not the default, so that the test sees the setting applied. */
const PHOTO_NICENESS = 7

/** 1600×800 as stored, left half red and right half blue, turned by EXIF orientation 6: shown 800×1600, red on top. */
function sidewaysJpeg(): Promise<Buffer> {
  const half = { width: 800, height: 800, channels: 3 as const }
  return sharp({ create: { width: 1600, height: 800, channels: 3, background: '#f00' } })
    .composite([{ input: { create: { ...half, background: '#00f' } }, left: 800, top: 0 }])
    .jpeg()
    .withExif({ IFD0: { Make: 'SecretCam' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '55/1 45/1 0/1', GPSLongitudeRef: 'E', GPSLongitude: '37/1 37/1 0/1' } })
    .withMetadata({ orientation: 6 })
    .toBuffer()
}

/** The sRGB colour rgb(200, 100, 50) written as a Display P3 JPEG (other numbers, and the P3 profile), 1200×900. */
function displayP3Jpeg(): Promise<Buffer> {
  return sharp({ create: { width: 1200, height: 900, channels: 3, background: { r: 200, g: 100, b: 50 } } })
    .withIccProfile('p3')
    .jpeg({ quality: 95 })
    .toBuffer()
}

async function pixel(image: Buffer, x: number, y: number, options: sharp.SharpOptions = {}): Promise<number[]> {
  const { data } = await sharp(image, options).extract({ left: x, top: y, width: 1, height: 1 }).raw().toBuffer({ resolveWithObject: true })
  return [...data.subarray(0, 3)]
}

const near = (actual: number[], expected: number[], tolerance: number) => actual.every((value, i) => Math.abs(value - expected[i]!) <= tolerance)

describe('the stored size of a photo (IMAGE_MAX_EDGE)', () => {
  let t: TestApp
  let agency: Tenant

  before(async () => {
    t = await buildTestApp({ IMAGE_MAX_EDGE: String(MAX_EDGE), IMAGE_PROCESSING_NICENESS: String(PHOTO_NICENESS) })
    agency = await createTenant(t.app, { email: 'sizes@agency.example' })
  })
  after(() => t.close())

  /** Uploads to a fresh property; the photo as the API shows it and its two files. */
  async function store(file: Buffer) {
    const propertyId = (await submitProperty(t.app, agency)).id
    const response = await upload(t.app, agency, { file, fields: { property_id: String(propertyId) } })
    assert.equal(response.statusCode, 201, response.body)
    const image = response.json<StoredImage>()
    const fetch = async (url: string) => {
      const served = await t.app.inject(new URL(url).pathname)
      assert.equal(served.statusCode, 200)
      return served.rawPayload
    }
    return { image, file: await fetch(image.url), thumbnail: await fetch(image.thumbnail_url) }
  }

  it('shrinks a larger photo of each format to the limit on its longer side, keeping its aspect ratio; the API says what the file is', async () => {
    for (const [format, width, height, stored] of [
      ['jpeg', 1500, 1000, { width: 1000, height: 667 }],
      ['png', 1200, 1600, { width: 750, height: 1000 }],
      ['webp', 3000, 1000, { width: 1000, height: 333 }],
    ] as const) {
      const { image, file, thumbnail } = await store(await photo(format, width, height))
      assert.deepEqual({ width: image.width, height: image.height }, stored, format)
      const fileMeta = await sharp(file).metadata()
      assert.equal(fileMeta.format, format)
      assert.deepEqual({ width: fileMeta.width, height: fileMeta.height }, stored, `${format}: the stored file`)
      const thumbnailMeta = await sharp(thumbnail).metadata()
      assert.equal(thumbnailMeta.width, 400)
      assert.equal(thumbnailMeta.height, Math.round((400 * height) / width), `${format}: the thumbnail's aspect ratio`)
    }
  })

  it('never enlarges a smaller photo, nor its thumbnail', async () => {
    for (const [width, height, thumbnailSize] of [
      [900, 600, { width: 400, height: 267 }],
      [300, 200, { width: 300, height: 200 }],
    ] as const) {
      const { image, file, thumbnail } = await store(await photo('jpeg', width, height))
      assert.deepEqual({ width: image.width, height: image.height }, { width, height })
      const fileMeta = await sharp(file).metadata()
      assert.deepEqual({ width: fileMeta.width, height: fileMeta.height }, { width, height })
      const thumbnailMeta = await sharp(thumbnail).metadata()
      assert.deepEqual({ width: thumbnailMeta.width, height: thumbnailMeta.height }, thumbnailSize)
    }
  })

  it('turns a larger photo upright by its EXIF orientation and keeps no metadata in either file', async () => {
    const original = await sidewaysJpeg()
    assert.equal((await sharp(original).metadata()).orientation, 6, 'the fixture is turned by EXIF')
    const { image, file, thumbnail } = await store(original)
    assert.deepEqual({ width: image.width, height: image.height }, { width: 500, height: 1000 })
    assert.ok(near(await pixel(file, 250, 100), [255, 0, 0], 16), 'red on top')
    assert.ok(near(await pixel(file, 250, 900), [0, 0, 255], 16), 'blue below')
    assert.deepEqual([(await sharp(thumbnail).metadata()).width, (await sharp(thumbnail).metadata()).height], [400, 800])
    for (const stored of [file, thumbnail]) {
      const metadata = await sharp(stored).metadata()
      assert.equal(metadata.exif, undefined)
      assert.equal(metadata.orientation, undefined)
      assert.equal(metadata.icc, undefined)
      assert.ok(!stored.includes(Buffer.from('SecretCam')))
    }
  })

  it('converts a photo with a colour profile (Display P3) to sRGB and keeps no profile', async () => {
    const original = await displayP3Jpeg()
    assert.ok((await sharp(original).metadata()).icc, 'the fixture carries its profile')
    const ignoringProfile = await pixel(original, 600, 450, { ignoreIcc: true })
    assert.ok(!near(ignoringProfile, [200, 100, 50], 8), `the fixture's own numbers (${ignoringProfile.join(', ')}) are not the sRGB ones`)
    const { image, file, thumbnail } = await store(original)
    assert.deepEqual({ width: image.width, height: image.height }, { width: 1000, height: 750 })
    for (const stored of [file, thumbnail]) {
      assert.equal((await sharp(stored).metadata()).icc, undefined)
      const colour = await pixel(stored, 200, 150, { ignoreIcc: true })
      assert.ok(near(colour, [200, 100, 50], 4), `stored as rgb(${colour.join(', ')}), in sRGB rgb(200, 100, 50)`)
    }
  })

  // Linux gives each thread its own nice value, in field 19 of /proc/self/task/<id>/stat.
  it(
    'processes photos on libvips threads at a lower CPU priority than requests (IMAGE_PROCESSING_NICENESS)',
    { skip: process.platform !== 'linux' },
    async () => {
      await store(await sidewaysJpeg())
      await store(await sidewaysJpeg())
      const threads = readdirSync('/proc/self/task').map((id) => ({
        id: Number(id),
        name: readFileSync(`/proc/self/task/${id}/comm`, 'utf8').trim(),
        nice: Number(readFileSync(`/proc/self/task/${id}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]),
      }))
      const photoThreads = threads.filter((thread) => thread.name === 'libvips worker')
      assert.ok(photoThreads.length > 0, 'libvips has worker threads')
      assert.deepEqual(
        photoThreads.map((thread) => thread.nice),
        photoThreads.map(() => PHOTO_NICENESS),
      )
      // The rest of the process, the event loop first, is left at its own priority.
      assert.equal(threads.find((thread) => thread.id === process.pid)!.nice, 0)
    },
  )
})
