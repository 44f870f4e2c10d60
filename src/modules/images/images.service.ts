import { randomBytes } from 'node:crypto'
import type { Config } from '../../config.js'
import { isDatabaseUnavailable } from '../../db/availability.js'
import type { Database, PipelinedDatabase } from '../../db/client.js'
import { ApiError, DEAL_CLOSED, HELD_BY_SUSPENSION, PROPERTY_NOT_FOUND, IMAGE_NOT_FOUND, type FieldError } from '../../lib/errors.js'
import { invalidAddressError, OutboundError, type OutboundClient } from '../../lib/outbound-http.js'
import { toUtcTimestamp } from '../../lib/time.js'
import type { CatalogueAnnouncements } from '../catalogue/catalogue-announcements.js'
import { canBeEdited } from '../properties/listing-status.js'
import type { ImageProcessor } from './image-processing.js'
import { detectImageType, photoRefusalOf, refusedFor, TYPE_SNIFF_BYTES, type PhotoRefusal, type ProcessedImage } from './image-processing.js'
import * as repository from './images.repository.js'
import type { PropertyImage } from './images.schemas.js'
import { compareStorageWithRows, type NamedKey } from './orphan-files.js'
import type { Storage } from './storage.js'

/** Every key the service chooses starts with it; the sweep lists nothing else. */
const PHOTO_KEY_PREFIX = 'photos/'
/** Row keys read per statement by the sweep, as many as a page of the storage's listing. */
const SWEEP_PAGE = 1000
/** Missing files a sweep names; past it, only counted. */
const MISSING_REPORTED = 1000
/** Photos added by URL are fetched within this time, through at most this many redirects. */
const DOWNLOAD_TIMEOUT_MS = 10_000
/** What a 503 for failing storage asks a client to wait. */
const STORAGE_RETRY_AFTER_S = 5

/** The photo's files could not be written: a 503, with the storage's error as its cause (logged). */
export class StorageUnavailable extends ApiError {
  constructor(cause: unknown) {
    super('unavailable', 'The photo storage cannot take the photo right now; retry shortly.', {}, { 'retry-after': String(STORAGE_RETRY_AFTER_S) })
    this.cause = cause
  }
}
const DOWNLOAD_MAX_REDIRECTS = 3

export interface NewPhoto {
  propertyId: number
  sortOrder: number
  bytes: Buffer
  sourceUrl?: string | undefined
  /** Added by the listing's feed (feedPhotosOf), not by the agency. */
  byFeed?: boolean
}

/** A 404 for a listing that is not the agency's, a 409 for a closed one or one its suspension holds (nothing changes). */
function checkPhotosCanChange(listing: { statusId: number; heldStatusId: number | null } | undefined): void {
  if (!listing) throw ApiError.notFound(PROPERTY_NOT_FOUND)
  if (!canBeEdited(listing.statusId)) throw ApiError.conflict(DEAL_CLOSED)
  if (listing.heldStatusId !== null) throw ApiError.conflict(HELD_BY_SUSPENSION)
}

/** A stored photo as the API shows it. */
function toImage(row: repository.ImageRow, mediaBase: string): PropertyImage {
  return {
    id: row.id,
    property_id: row.propertyId,
    url: `${mediaBase}/${row.fileKey}`,
    sort_order: row.sortOrder,
    created_at: toUtcTimestamp(row.createdAt),
    thumbnail_url: `${mediaBase}/${row.thumbnailKey}`,
    width: row.width,
    height: row.height,
    ...(row.sourceUrl === null ? {} : { source_url: row.sourceUrl }),
  }
}

/** What one sweep of the storage found (ImagesService.sweepOrphanFiles). */
export interface OrphanSweep {
  filesListed: number
  /** Files no row named, old enough, removed. */
  filesRemoved: number
  /** Files that rows old enough name but storage lacks (a photo or a thumbnail): the first MISSING_REPORTED. */
  missingFiles: { imageId: number; key: string }[]
  missingFileCount: number
}

/**
 * Photos of a tenant's properties: the only writer of property_images and of the files in
 * storage. See docs/api.md#photos.
 */
export class ImagesService {
  constructor(
    private readonly db: Database,
    private readonly storage: Storage,
    private readonly processor: ImageProcessor,
    private readonly config: Pick<Config, 'images'>,
    private readonly mediaBase: string,
    private readonly outbound: OutboundClient,
    /** Photos are part of what the catalogue shows: a change to a published listing's is announced with it. */
    private readonly announce: Pick<CatalogueAnnouncements, 'photosChanged' | 'shownNow'>,
  ) {}

  /** Photos in the processing queue: admitted, re-encoded now, waiting. */
  processingLoad(): ImageProcessor['load'] {
    return this.processor.load
  }

  /** The tenant's photos, or one property's; `via` a transaction that holds the property. */
  async list(tenantId: number, propertyId?: number, via: PipelinedDatabase = this.db): Promise<PropertyImage[]> {
    return (await repository.listImages(via, tenantId, propertyId)).map((row) => toImage(row, this.mediaBase))
  }

  /**
   * The listing's photos added by URL, in display order, and whether its feed added each
   * (addFromUrl with `byFeed`): the feed keeps its own as its offer says, and downloads no URL
   * already attached.
   */
  async photosByUrlOf(tenantId: number, propertyId: number): Promise<{ id: number; sourceUrl: string; sortOrder: number; byFeed: boolean }[]> {
    return (await repository.listImages(this.db, tenantId, propertyId)).flatMap((row) =>
      row.sourceUrl !== null ? [{ id: row.id, sourceUrl: row.sourceUrl, sortOrder: row.sortOrder, byFeed: row.addedByFeed }] : [],
    )
  }

  async get(tenantId: number, id: number): Promise<PropertyImage> {
    const row = await repository.findImage(this.db, tenantId, id)
    if (!row) throw ApiError.notFound(IMAGE_NOT_FOUND)
    return toImage(row, this.mediaBase)
  }

  async updateSortOrder(tenantId: number, id: number, sortOrder: number): Promise<PropertyImage> {
    const row = await this.db.transaction(async (tx) => {
      const propertyId = await this.lockListingOfPhoto(tx, tenantId, id)
      // The position it has already changes nothing, and announces nothing: any UPDATE of the
      // table counts as a change of the catalogue's photos (a PUT repeated by a sync, say).
      const current = await repository.findImage(tx, tenantId, id)
      if (current?.sortOrder === sortOrder) return current
      // A new position may leave the order shown as it was (the last photo moved further back).
      const shownBefore = propertyId === undefined ? undefined : await this.announce.shownNow(tx, propertyId)
      const updated = await repository.updateSortOrder(tx, tenantId, id, sortOrder)
      if (!updated) throw ApiError.notFound(IMAGE_NOT_FOUND)
      await this.announce.photosChanged(tx, updated.propertyId, shownBefore)
      return updated
    })
    return toImage(row, this.mediaBase)
  }

  async remove(tenantId: number, id: number): Promise<void> {
    const deleted = await this.db.transaction(async (tx) => {
      await this.lockListingOfPhoto(tx, tenantId, id)
      const found = await repository.deleteImage(tx, tenantId, id)
      if (!found) throw ApiError.notFound(IMAGE_NOT_FOUND)
      await this.announce.photosChanged(tx, found.propertyId)
      return found
    })
    await this.removeFiles(deleted.keys)
  }

  /**
   * Deletes a property's photo rows in the transaction that deletes the property; their files'
   * keys, to remove with removeFiles once it has committed.
   */
  deleteRowsOfProperty(tx: Database, tenantId: number, propertyId: number): Promise<string[]> {
    return repository.deletePropertyImages(tx, tenantId, propertyId)
  }

  /**
   * Removes stored files whose rows are gone, once that has committed. Storage that fails now
   * (an S3 outage) fails nothing: the deletion stands, and the hourly orphan sweep removes the
   * files no row names.
   */
  async removeFiles(keys: readonly string[]): Promise<void> {
    await this.storage.remove(keys).catch(() => undefined)
  }

  /**
   * Removes the files in storage that no row names and that were last modified before
   * `olderThan`: left by a crash between writing a photo's files and its row, or between
   * deleting a row and its files. Younger ones may be an upload whose row is on its way. Rows
   * created before `olderThan` whose file is missing are reported, never deleted: the photo
   * may be restored from a backup. Stops between pages once `signal` is aborted.
   */
  async sweepOrphanFiles(olderThan: Date, signal?: AbortSignal): Promise<OrphanSweep> {
    const sweep: OrphanSweep = { filesListed: 0, filesRemoved: 0, missingFiles: [], missingFileCount: 0 }
    for await (const found of compareStorageWithRows(this.storage.list(PHOTO_KEY_PREFIX, SWEEP_PAGE, signal), this.namedKeys())) {
      sweep.filesListed += found.listed
      const old = found.unnamed.filter((file) => file.modifiedAt < olderThan).map((file) => file.key)
      if (old.length > 0) {
        // Asked once more just before removing: a photo removed by mistake cannot be had back.
        const named = await repository.keysNamedByRows(this.db, old)
        const orphans = old.filter((key) => !named.has(key))
        await this.storage.remove(orphans)
        sweep.filesRemoved += orphans.length
      }
      for (const row of found.missing) {
        if (row.createdAt >= olderThan) continue
        sweep.missingFileCount++
        if (sweep.missingFiles.length < MISSING_REPORTED) sweep.missingFiles.push({ imageId: row.imageId, key: row.key })
      }
      if (signal?.aborted) break
    }
    return sweep
  }

  /** The keys rows name, in byte order, a page at a time. */
  private async *namedKeys(): AsyncGenerator<NamedKey[]> {
    let after = ''
    for (;;) {
      const page = await repository.namedKeysAfter(this.db, after, SWEEP_PAGE)
      if (page.length > 0) yield page
      if (page.length < SWEEP_PAGE) return
      after = page[page.length - 1]!.key
    }
  }

  /** Checks the property first, so a photo for another tenant's property is never processed. */
  async assertPropertyAccepts(tenantId: number, propertyId: number): Promise<void> {
    checkPhotosCanChange(await repository.findOwnProperty(this.db, tenantId, propertyId))
    if ((await repository.countImages(this.db, tenantId, propertyId)) >= this.config.images.perProperty) throw this.tooManyPhotos()
  }

  /**
   * Locks the listing whose photo is changed, until the transaction ends, as adding a photo
   * does: a photo change then follows or precedes the listing's own change (a publication, a
   * withdrawal) whole, and is announced for the status the listing has once that has committed
   * (otherwise it read the status before a withdrawal committed and wrote the change feed an
   * `upsert` after its `remove`). A missing photo is a 404 (IMAGE_NOT_FOUND) later. Answers the
   * listing's id, undefined when there is no such photo, nor when its listing was deleted (and
   * the photo with it) while this waited for the lock: what the caller asked for is the photo.
   */
  private async lockListingOfPhoto(tx: Database, tenantId: number, id: number): Promise<number | undefined> {
    const photo = await repository.findImage(tx, tenantId, id)
    if (!photo) return undefined
    const listing = await repository.findOwnProperty(tx, tenantId, photo.propertyId, true)
    if (!listing) return undefined
    checkPhotosCanChange(listing)
    return photo.propertyId
  }

  /**
   * An upload: a place in the processing queue is taken before `readPhoto` reads the bytes (a
   * 503 when the queue is full, with nothing read or stored), and given back once it is done.
   */
  async upload(tenantId: number, readPhoto: () => Promise<NewPhoto>): Promise<PropertyImage> {
    const release = this.processor.admit()
    try {
      return await this.add(tenantId, await readPhoto())
    } finally {
      release()
    }
  }

  /**
   * Processes and stores one photo. The files are written first and the row last, in a
   * transaction that re-checks the property and the count under the property's lock; if
   * anything fails after the files are written, they are removed, so nothing is left behind.
   */
  private async add(tenantId: number, photo: NewPhoto): Promise<PropertyImage> {
    await this.assertPropertyAccepts(tenantId, photo.propertyId)
    const processed = await this.processor.process(photo.bytes)
    const keys = storageKeys(processed)
    try {
      await this.storeFiles(keys, processed)
      const row = await this.db.transaction(async (tx) => {
        checkPhotosCanChange(await repository.findOwnProperty(tx, tenantId, photo.propertyId, true))
        if ((await repository.countImages(tx, tenantId, photo.propertyId)) >= this.config.images.perProperty) throw this.tooManyPhotos()
        const inserted = await repository.insertImage(tx, {
          tenantId,
          propertyId: photo.propertyId,
          sortOrder: photo.sortOrder,
          fileKey: keys.file,
          thumbnailKey: keys.thumbnail,
          contentType: processed.contentType,
          width: processed.full.width,
          height: processed.full.height,
          bytes: processed.full.data.length,
          sourceUrl: photo.sourceUrl ?? null,
          addedByFeed: photo.byFeed ?? false,
        })
        await this.announce.photosChanged(tx, photo.propertyId)
        return inserted
      })
      return toImage(row, this.mediaBase)
    } catch (error) {
      // With the database lost, the row may have been committed (its COMMIT sent, the answer
      // lost): the files stay, since a photo without its file is broken, while files without
      // a photo are only space, which the hourly orphan sweep takes back.
      // Storage that failed would fail (or stall) again now: what it kept is the sweep's too.
      if (!isDatabaseUnavailable(error) && !(error instanceof StorageUnavailable)) await this.storage.remove([keys.file, keys.thumbnail]).catch(() => undefined)
      throw error
    }
  }

  /**
   * Writes a photo's files. Storage that fails (a full or read-only disk, an S3 store that
   * refuses or does not answer) is no fault of the request: a 503 to retry, its cause logged.
   */
  private async storeFiles(keys: { file: string; thumbnail: string }, processed: ProcessedImage): Promise<void> {
    try {
      await this.storage.put(keys.file, processed.full.data, processed.contentType)
      await this.storage.put(keys.thumbnail, processed.thumbnail.data, processed.contentType)
    } catch (error) {
      throw new StorageUnavailable(error)
    }
  }

  /**
   * Downloads the photo through the guarded client, then adds it as an upload. `stop` ends a
   * download under way (a feed's worker that stops), as its time limit would.
   */
  async addFromUrl(
    tenantId: number,
    photo: { propertyId: number; sortOrder: number; url: string; byFeed?: boolean },
    stop?: AbortSignal,
  ): Promise<PropertyImage> {
    await this.assertPropertyAccepts(tenantId, photo.propertyId)
    const release = this.processor.admit()
    try {
      const bytes = await this.download(photo.url, stop)
      return await this.add(tenantId, { propertyId: photo.propertyId, sortOrder: photo.sortOrder, bytes, sourceUrl: photo.url, byFeed: photo.byFeed }).catch(
        (error: unknown) => {
          throw namedOnUrl(error)
        },
      )
    } finally {
      release()
    }
  }

  private async download(url: string, stop: AbortSignal | undefined): Promise<Buffer> {
    const refuse = (why: string | OutboundError, refusal: PhotoRefusal) =>
      refusedFor(invalidAddressError('url', 'The photo could not be downloaded', why), refusal)
    let response
    try {
      response = await this.outbound.request({
        url,
        timeoutMs: DOWNLOAD_TIMEOUT_MS,
        maxBodyBytes: this.config.images.maxBytes,
        onLargeBody: 'fail',
        maxRedirects: DOWNLOAD_MAX_REDIRECTS,
        headers: { accept: 'image/jpeg, image/png, image/webp' },
        signal: stop,
      })
    } catch (error) {
      if (error instanceof OutboundError) throw refuse(error, { kind: 'download', failure: error.kind })
      throw error
    }
    if (response.status < 200 || response.status > 299)
      throw refuse(`the address answered HTTP ${response.status}`, { kind: 'http_status', status: response.status })
    if (response.body.length === 0) throw refuse('the address answered with an empty body', { kind: 'empty' })
    // The type is decided from the bytes; a page or anything else is refused here.
    try {
      await detectImageType(response.body.subarray(0, TYPE_SNIFF_BYTES))
    } catch (error) {
      // What the bytes are, not what the address labelled them: a page sent as image/jpeg is a page.
      if (error instanceof ApiError) {
        const sent = whatWasSent(response.body)
        const found = photoRefusalOf(error)
        const detected = found?.kind === 'not_a_photo' ? found.detected : undefined
        throw refuse(`the address did not return a JPEG, PNG or WebP photo (${sent})`, {
          kind: 'not_a_photo',
          detected,
          webPage: sent === 'it sent a web page',
        })
      }
      throw error
    }
    return response.body
  }

  private tooManyPhotos(): ApiError {
    const most = this.config.images.perProperty
    return refusedFor(
      ApiError.validation(
        [{ loc: ['body', 'property_id'], msg: `already has ${most} photos, the most allowed` }],
        `This property already has ${most} photos, the most allowed; delete one first.`,
      ),
      { kind: 'too_many_photos', most },
    )
  }
}

/**
 * A downloaded photo is judged as an upload, whose problems (damaged, too many pixels) are the
 * `file`'s; the client sent `url`, so they are named on it (docs/api.md#photos-by-url).
 */
function namedOnUrl(error: unknown): unknown {
  const errors = error instanceof ApiError ? (error.extra.errors as FieldError[] | undefined) : undefined
  if (!errors?.some(({ loc }) => loc[0] === 'body' && loc[1] === 'file')) return error
  const named = ApiError.validation(
    errors.map((problem) => (problem.loc[0] === 'body' && problem.loc[1] === 'file' ? { ...problem, loc: ['body', 'url'] } : problem)),
    (error as ApiError).message,
  )
  named.cause = (error as ApiError).cause
  return named
}

/** Server-chosen, unguessable names; the thumbnail is named after its photo. */
function storageKeys(processed: ProcessedImage): { file: string; thumbnail: string } {
  const name = randomBytes(16).toString('base64url')
  return { file: `${PHOTO_KEY_PREFIX}${name}.${processed.extension}`, thumbnail: `${PHOTO_KEY_PREFIX}${name}-400.${processed.extension}` }
}

/** What a download that is not a photo looks like from its first bytes, for the refusal. */
function whatWasSent(body: Buffer): string {
  const start = body.subarray(0, 512).toString('utf8').trimStart().toLowerCase()
  if (start.startsWith('<!doctype html') || start.startsWith('<html') || start.includes('<head') || start.includes('<body')) return 'it sent a web page'
  return 'it sent something else'
}
