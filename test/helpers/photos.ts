import { crc32 } from 'node:zlib'
import type { FastifyInstance } from 'fastify'
import sharp from 'sharp'
import type { Tenant } from './factories.js'

/** A real photo of the given format, with some texture so it compresses like one. */
export async function photo(format: 'jpeg' | 'png' | 'webp', width = 640, height = 480): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
    .toFormat(format)
    .toBuffer()
}

/** A JPEG 64×32 as stored, turned by EXIF orientation 6 (shown 32×64), with a camera and GPS position. */
export function jpegWithGpsAndOrientation(): Promise<Buffer> {
  return sharp({ create: { width: 64, height: 32, channels: 3, background: '#c33' } })
    .jpeg()
    .withExif({ IFD0: { Make: 'SecretCam' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '55/1 45/1 0/1', GPSLongitudeRef: 'E', GPSLongitude: '37/1 37/1 0/1' } })
    .withMetadata({ orientation: 6 })
    .toBuffer()
}

/** One PNG chunk: its length, type, data and CRC. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([length, body, crc])
}

/** A decompression bomb: a valid, tiny PNG whose header declares 100000×100000 pixels. */
export function pngBomb(): Buffer {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(100_000, 0)
  header.writeUInt32BE(100_000, 4)
  header.set([8, 2, 0, 0, 0], 8) // 8-bit RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', Buffer.from([0x78, 0x9c, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01])),
    pngChunk('IEND', Buffer.alloc(0)),
  ])
}

export interface UploadOptions {
  file?: Buffer
  filename?: string
  contentType?: string
  fields?: Record<string, string>
}

/** A multipart/form-data body as a browser or curl would send it. */
export async function multipartBody({ file, filename = 'photo.jpg', contentType = 'image/jpeg', fields = {} }: UploadOptions) {
  const form = new FormData()
  for (const [name, value] of Object.entries(fields)) form.append(name, value)
  if (file) form.append('file', new Blob([file], { type: contentType }), filename)
  const encoded = new Response(form)
  return { payload: Buffer.from(await encoded.arrayBuffer()), contentType: encoded.headers.get('content-type')! }
}

/** POST /property-images/upload as the tenant. */
export async function upload(app: FastifyInstance, tenant: Tenant | undefined, options: UploadOptions) {
  const { payload, contentType } = await multipartBody(options)
  return app.inject({
    method: 'POST',
    url: '/property-images/upload',
    headers: { 'content-type': contentType, ...(tenant ? { 'x-api-key': tenant.apiKey } : {}) },
    payload,
  })
}
