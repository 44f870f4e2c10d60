/**
 * Turns the bytes a tenant sent into the files the service stores: the type is decided
 * from the bytes alone; the pixel count is read from the header before anything is decoded
 * (a tiny file declaring a huge image is refused without allocating it); the upload is decoded
 * once, upright, at most IMAGE_MAX_EDGE px on its longer side and in sRGB, and re-encoded in
 * its own format with no metadata kept (no EXIF, no GPS, no ICC profile); the THUMBNAIL_WIDTH px
 * thumbnail is made from that stored photo.
 *
 * sharp does the work on libuv's thread pool, off the event loop; `limit` bounds how many
 * photos are processed at once, so an upload burst leaves the API its other core.
 * docs/performance.md#photos has what each step costs.
 */
import { availableParallelism } from 'node:os'
import { fileTypeFromBuffer } from 'file-type'
import pLimit, { type LimitFunction } from 'p-limit'
import sharp, { type Sharp } from 'sharp'
import type { ImageLimits } from '../../config.js'
import { ApiError } from '../../lib/errors.js'
import type { OutboundFailureKind } from '../../lib/outbound-http.js'
import { lowerPriorityOfThreads } from '../../lib/thread-priority.js'

type RenditionName = 'full' | 'thumbnail'

/**
 * Why a photo was refused, beside the refusal's words for the API: a feed's report words it in
 * Russian from this (feeds/feed-import.ts). Carried as the refusal's `cause` (photoRefusalOf).
 */
export type PhotoRefusal =
  | { kind: 'too_large'; maxBytes: number }
  | { kind: 'not_a_photo'; detected?: string | undefined; webPage?: boolean }
  | { kind: 'unreadable' }
  | { kind: 'too_many_pixels'; width: number; height: number; maxPixels: number }
  | { kind: 'download'; failure: OutboundFailureKind }
  | { kind: 'http_status'; status: number }
  | { kind: 'empty' }
  | { kind: 'too_many_photos'; most: number }

/** Marks a refusal with why it was made (PhotoRefusal). */
export function refusedFor<T extends Error>(error: T, why: PhotoRefusal): T {
  error.cause = { photoRefusal: why }
  return error
}

/** Why a photo was refused, if the error is such a refusal. */
export function photoRefusalOf(error: unknown): PhotoRefusal | undefined {
  const cause = error instanceof Error ? (error.cause as { photoRefusal?: PhotoRefusal } | undefined) : undefined
  return cause?.photoRefusal
}

export const ACCEPTED_TYPES = {
  // Huffman tables fitted to the photo only for the thumbnail, the file catalogue pages show:
  // for the stored photo they took two thirds of its encoding time for a few per cent of its
  // size (docs/performance.md#photos).
  'image/jpeg': {
    extension: 'jpg',
    encode: (image: Sharp, rendition: RenditionName) => image.jpeg({ quality: 85, optimiseCoding: rendition === 'thumbnail' }),
  },
  'image/png': { extension: 'png', encode: (image: Sharp) => image.png() },
  'image/webp': { extension: 'webp', encode: (image: Sharp) => image.webp({ quality: 82 }) },
} as const
export type AcceptedType = keyof typeof ACCEPTED_TYPES

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

/**
 * libvips threads for each photo, so that photos at once × threads each stay within half the
 * cores and the catalogue keeps the other half: one with the default IMAGE_PROCESSING_CONCURRENCY
 * (half the cores). A JPEG decodes on one thread whatever this says; more threads only overlap
 * the resize and the encoding with the decode.
 */
export function threadsPerPhoto(processingConcurrency: number, cores = availableParallelism()): number {
  return Math.max(1, Math.floor(cores / 2 / processingConcurrency))
}

/** The accepted type of these leading bytes, or a 415 naming what they are. */
export async function detectImageType(head: Buffer): Promise<AcceptedType> {
  const detected = await fileTypeFromBuffer(head)
  // An animated PNG is a PNG with extra chunks (a PNG decoder shows its first frame), as an animated WebP is a WebP.
  if (detected?.mime === 'image/apng') return 'image/png'
  if (detected && detected.mime in ACCEPTED_TYPES) return detected.mime as AcceptedType
  throw refusedFor(
    new ApiError(
      'unsupported_media_type',
      `Only JPEG, PNG and WebP photos are accepted; this file ${detected ? `is ${detected.mime}` : 'is not an image of a known type'}.`,
    ),
    { kind: 'not_a_photo', detected: detected?.mime },
  )
}

export class ImageProcessor {
  private readonly limit: LimitFunction
  /** Photos admitted and not yet done: being read, waiting, or being re-encoded. */
  private admitted = 0

  constructor(private readonly limits: ImageLimits) {
    this.limit = pLimit(limits.processingConcurrency)
    // libvips' setting is the process's: there is one processor per process.
    sharp.concurrency(threadsPerPhoto(limits.processingConcurrency))
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
    // A PNG ends with its IEND chunk (some tools write bytes after it). Cut short by a few bytes
    // it may still decode whole, the last chunk's checksum and the end lost, without a warning.
    if (contentType === 'image/png' && bytes.lastIndexOf(PNG_END) === -1) throw unreadable()
    // The header alone, whatever size it declares, so a bomb gets its own answer below.
    const metadata = await sharp(bytes, { limitInputPixels: false })
      .metadata()
      .catch(() => {
        throw unreadable()
      })
    const { width = 0, height = 0 } = metadata
    if (width * height > this.limits.maxPixels) {
      throw refusedFor(
        ApiError.validation(
          [{ loc: ['body', 'file'], msg: `is ${width}×${height} pixels; at most ${pixelsInWords(this.limits.maxPixels)} are accepted` }],
          `The photo is ${width}×${height} pixels; at most ${pixelsInWords(this.limits.maxPixels)} are accepted.`,
        ),
        { kind: 'too_many_pixels', width, height, maxPixels: this.limits.maxPixels },
      )
    }
    const { encode, extension } = ACCEPTED_TYPES[contentType]
    // The work of a photo runs on libvips' worker threads: with a higher nice value (IMAGE_PROCESSING_NICENESS)
    // requests, the event loop and PostgreSQL beside it, come first and photos take the CPU they leave.
    // libvips starts threads as a pipeline needs them, so those a step started are lowered after it too.
    const lowerPriority = () => lowerPriorityOfThreads('libvips worker', this.limits.processingNiceness)
    lowerPriority()
    try {
      // One after the other: a photo takes one core at a time (see sharp.concurrency).
      const full = await encode(await this.decode(bytes, metadata), 'full').toBuffer({ resolveWithObject: true })
      lowerPriority()
      // From the stored photo, already upright, in sRGB and a fraction of the upload's size;
      // JPEG and WebP decode straight to a fraction of that again (shrink-on-load).
      const thumbnail = await encode(sharp(full.data).resize({ width: THUMBNAIL_WIDTH, withoutEnlargement: true }), 'thumbnail').toBuffer({
        resolveWithObject: true,
      })
      lowerPriority()
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

  /**
   * The upload's one decode, ready to encode: upright (EXIF orientation applied, after the
   * shrink), at most maxEdge px on its longer side, in sRGB. JPEG and WebP decode straight to
   * a fraction of their size where the limit allows (shrink-on-load).
   *
   * A photo with an RGB profile (a phone's Display P3, or an embedded sRGB one) is shrunk in its
   * own space and converted afterwards, at the stored size: the conversion costs about as much
   * per pixel as the decode. An uncompressed TIFF is the buffer that carries the profile from
   * the one to the other.
   */
  private async decode(bytes: Buffer, metadata: sharp.Metadata): Promise<Sharp> {
    const edge = this.limits.maxEdge
    // A file its decoder finds damaged (a PNG whose checksum fails) is refused, not stored as
    // decoded; what a decoder only warns of is taken (libjpeg warns of harmless extra bytes in
    // camera files, and of corrupt data alike).
    const decoded = sharp(bytes, { limitInputPixels: this.limits.maxPixels, failOn: 'error', autoOrient: true }).resize({
      width: edge,
      height: edge,
      fit: 'inside',
      withoutEnlargement: true,
    })
    if (metadata.icc === undefined || (metadata.space !== 'srgb' && metadata.space !== 'rgb16')) return decoded
    return sharp(await decoded.keepIccProfile().tiff({ compression: 'none' }).toBuffer())
  }
}

/** The last 12 bytes of every PNG: the IEND chunk, empty, and its checksum. */
const PNG_END = Buffer.from('0000000049454e44ae426082', 'hex')

/** IMAGE_MAX_PIXELS as a refusal says it: "50 megapixels", or "2,500,000 pixels" where megapixels would round it. */
function pixelsInWords(pixels: number): string {
  return pixels % 1_000_000 === 0 ? `${pixels / 1_000_000} megapixels` : `${pixels.toLocaleString('en-US')} pixels`
}

export function tooLarge(maxBytes: number): ApiError {
  return refusedFor(new ApiError('payload_too_large', `The photo is larger than ${formatMiB(maxBytes)}, the most accepted.`), { kind: 'too_large', maxBytes })
}

function unreadable(): ApiError {
  return refusedFor(
    ApiError.validation(
      [{ loc: ['body', 'file'], msg: 'could not be read as an image (damaged or truncated)' }],
      'The photo could not be read: the file is damaged or truncated.',
    ),
    { kind: 'unreadable' },
  )
}

function formatMiB(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`
}
