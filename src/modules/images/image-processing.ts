/**
 * Turns the bytes a tenant sent into the files the service stores: the type is decided
 * from the bytes alone; the pixel count is read from the header before anything is decoded
 * (a tiny file declaring a huge image is refused without allocating it); the photo is
 * re-encoded in its own format with orientation applied and no metadata kept (no EXIF, no
 * GPS), at most FULL_SIZE px on its longer side, plus a THUMBNAIL_WIDTH px rendition.
 *
 * sharp does the work on libuv's thread pool, off the event loop; `limit` bounds how many
 * photos are processed at once, so an upload burst leaves the API its other core.
 */
import { fileTypeFromBuffer } from 'file-type'
import pLimit, { type LimitFunction } from 'p-limit'
import sharp, { type Sharp } from 'sharp'
import type { ImageLimits } from '../../config.js'
import { ApiError } from '../../lib/errors.js'

export const ACCEPTED_TYPES = {
  'image/jpeg': { extension: 'jpg', encode: (image: Sharp) => image.jpeg({ quality: 85 }) },
  'image/png': { extension: 'png', encode: (image: Sharp) => image.png() },
  'image/webp': { extension: 'webp', encode: (image: Sharp) => image.webp({ quality: 82 }) },
} as const
export type AcceptedType = keyof typeof ACCEPTED_TYPES

/** Longer side of the stored photo: enough for any listing page, far below a camera's. */
export const FULL_SIZE = 2560
export const THUMBNAIL_WIDTH = 400
/** file-type needs at most this many leading bytes to decide. */
export const TYPE_SNIFF_BYTES = 4100
/** What a refused upload is asked to wait: a photo takes about a second to re-encode. */
const BUSY_RETRY_AFTER_S = 2

export interface Rendition {
  data: Buffer
  width: number
  height: number
}

export interface ProcessedImage {
  contentType: AcceptedType
  extension: string
  full: Rendition
  thumbnail: Rendition
}

// libvips' own cache would keep decoded images around between requests; memory matters more.
sharp.cache(false)
// One libvips thread per photo: IMAGE_PROCESSING_CONCURRENCY then says how many cores photos take.
sharp.concurrency(1)

/** The accepted type of these leading bytes, or a 415 naming what they are. */
export async function detectImageType(head: Buffer): Promise<AcceptedType> {
  const detected = await fileTypeFromBuffer(head)
  if (detected && detected.mime in ACCEPTED_TYPES) return detected.mime as AcceptedType
  throw new ApiError(
    'unsupported_media_type',
    `Only JPEG, PNG and WebP photos are accepted; this file ${detected ? `is ${detected.mime}` : 'is not an image of a known type'}.`,
  )
}

export class ImageProcessor {
  private readonly limit: LimitFunction
  /** Photos admitted and not yet done: being read, waiting, or being re-encoded. */
  private admitted = 0

  constructor(private readonly limits: ImageLimits) {
    this.limit = pLimit(limits.processingConcurrency)
  }

  /**
   * Takes a place for one photo, from before its bytes are read until it is stored or refused,
   * and returns the function that gives it back. With every place taken (IMAGE_PROCESSING_CONCURRENCY
   * re-encoding, IMAGE_QUEUE_MAX waiting), a 503: the photos in memory stay bounded at
   * (concurrency + queue) × IMAGE_MAX_BYTES.
   */
  admit(): () => void {
    if (this.admitted >= this.limits.processingConcurrency + this.limits.queueMax) {
      throw new ApiError('unavailable', 'Too many photos are being processed right now; retry shortly.', {}, { 'retry-after': String(BUSY_RETRY_AFTER_S) })
    }
    this.admitted++
    let released = false
    return () => {
      if (released) return
      released = true
      this.admitted--
    }
  }

  /** Photos admitted (being read, waiting or re-encoded), re-encoded now, and waiting for it: for metrics and the bench. */
  get load(): { admitted: number; active: number; waiting: number } {
    return { admitted: this.admitted, active: this.limit.activeCount, waiting: this.limit.pendingCount }
  }

  /** Checks and re-encodes one photo; every refusal is an ApiError (413, 415 or 422). */
  async process(bytes: Buffer): Promise<ProcessedImage> {
    if (bytes.length > this.limits.maxBytes) throw tooLarge(this.limits.maxBytes)
    return this.limit(() => this.run(bytes))
  }

  private async run(bytes: Buffer): Promise<ProcessedImage> {
    const contentType = await detectImageType(bytes.subarray(0, TYPE_SNIFF_BYTES))
    const input = () => sharp(bytes, { limitInputPixels: this.limits.maxPixels, failOn: 'truncated' })
    // The header alone, whatever size it declares, so a bomb gets its own answer below.
    const metadata = await sharp(bytes, { limitInputPixels: false })
      .metadata()
      .catch(() => {
        throw unreadable()
      })
    const { width = 0, height = 0 } = metadata
    if (width * height > this.limits.maxPixels) {
      throw ApiError.validation(
        [{ loc: ['body', 'file'], msg: `is ${width}×${height} pixels; at most ${Math.floor(this.limits.maxPixels / 1e6)} megapixels are accepted` }],
        `The photo is ${width}×${height} pixels; at most ${Math.floor(this.limits.maxPixels / 1e6)} megapixels are accepted.`,
      )
    }
    const { encode, extension } = ACCEPTED_TYPES[contentType]
    try {
      // rotate() with no angle applies the EXIF orientation; sharp writes no metadata unless
      // asked. One after the other: a photo takes one core at a time (see sharp.concurrency).
      const full = await encode(input().rotate().resize({ width: FULL_SIZE, height: FULL_SIZE, fit: 'inside', withoutEnlargement: true })).toBuffer({
        resolveWithObject: true,
      })
      // JPEG and WebP decode straight to a fraction of their size here (shrink-on-load): cheap.
      const thumbnail = await encode(input().rotate().resize({ width: THUMBNAIL_WIDTH, withoutEnlargement: true })).toBuffer({ resolveWithObject: true })
      return {
        contentType,
        extension,
        full: { data: full.data, width: full.info.width, height: full.info.height },
        thumbnail: { data: thumbnail.data, width: thumbnail.info.width, height: thumbnail.info.height },
      }
    } catch {
      throw unreadable()
    }
  }
}

export function tooLarge(maxBytes: number): ApiError {
  return new ApiError('payload_too_large', `The photo is larger than ${formatMiB(maxBytes)}, the most accepted.`)
}

function unreadable(): ApiError {
  return ApiError.validation(
    [{ loc: ['body', 'file'], msg: 'could not be read as an image (damaged or truncated)' }],
    'The photo could not be read: the file is damaged or truncated.',
  )
}

function formatMiB(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`
}
