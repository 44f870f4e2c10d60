import { createHash } from 'node:crypto'
import pLimit, { type LimitFunction } from 'p-limit'
import stringify from 'safe-stable-stringify'
import type { Database } from '../../db/client.js'
import type { feedOffers, feedRunProblems } from '../../db/schema.js'
import { ApiError, cut } from '../../lib/errors.js'
import { photoRefusalOf } from '../images/image-processing.js'
import { StorageUnavailable, type ImagesService } from '../images/images.service.js'
import type { OutboundFailureKind } from '../../lib/outbound-http.js'
import { feedMovesFrom, ListingStatus } from '../properties/listing-status.js'
import type { PropertiesService } from '../properties/properties.service.js'
import type { ReferenceService } from '../reference/reference.service.js'
import type { AuthenticatedTenant } from '../tenants/authenticated-tenant.js'
import { FeedRunFailure } from './feed-download.js'
import * as repository from './feeds.repository.js'
import { MAX_PROBLEM_INTERNAL_ID, MAX_PROBLEM_MESSAGE } from './feeds.schemas.js'
import type { FeedRow, RunOutcome } from './feeds.repository.js'
import { FeedFormatError, readYandexRealtyOffers } from './yandex-realty/feed-reader.js'
import { feedPlaces, isRefusal, mapOffer, type OfferProblem } from './yandex-realty/offer-mapping.js'

/**
 * Offers applied at once. A new offer is one statement (a changed one a short transaction),
 * sent pipelined: with fewer in flight the worker waits on their answers (8: 930 offers/s, 16:
 * 1,046, 32: 1,215 on the 2-core bench machine). Their photos go through PHOTO_CONCURRENCY.
 */
const OFFER_CONCURRENCY = 32
/**
 * Offers whose photos are being synchronised at once: a photo is downloaded and re-encoded by
 * the process's image queue, which API uploads share and which answers 503 when full
 * (IMAGE_PROCESSING_CONCURRENCY + IMAGE_QUEUE_MAX). A busy queue is a photo not taken this
 * run (`image_download_failed`), tried again at the next.
 */
const PHOTO_CONCURRENCY = 2
/** Problems, and offers remembered, written per statement. */
const PROBLEM_BATCH = 500
const OFFER_BATCH = 200

export interface FeedImportDependencies {
  db: Database
  properties: PropertiesService
  images: ImagesService
  reference: ReferenceService
  /** FEED_PHOTOS: whether offers' photos are downloaded. */
  photos: boolean
  /** IMAGE_MAX_PER_PROPERTY: the photos a listing holds at most; an offer's first ones are taken. */
  photosPerListing: number
}

export interface FeedImportInput {
  feed: FeedRow
  runId: number
  /** When the run was started, by whichever worker (it keeps that time when another takes it over). */
  runStartedAt: Date
  /** Whether another worker held the run before (or this one, before it let go): see countOfUnrecorded. */
  takenOver: boolean
  agency: AuthenticatedTenant
  /** Reads the downloaded file from its start, once per pass. */
  read(): AsyncIterable<Buffer>
  /** Throws once the run's lease is lost, so a run another worker took over stops here. */
  stillHeld(): void
  /** Aborted when stillHeld starts throwing (the lease lost, the worker stopping): ends a photo's download under way. */
  stopped: AbortSignal
  /**
   * Asks the database whether the run is still this worker's, and throws as stillHeld does if
   * not: its feed deleted (with its runs) or its lease taken over since the last renewal; or a
   * FeedRunFailure if its agency has been suspended since it started.
   */
  confirmHeld(): Promise<void>
}

type Counts = RunOutcome['counts']
type NewProblem = typeof feedRunProblems.$inferInsert
type RememberedOffer = typeof feedOffers.$inferInsert

/** A listing's content as the feed gives it: equal digests mean the offer said nothing new. */
function offerDigest(submission: unknown, imageUrls: readonly string[]): string {
  return createHash('sha256')
    .update(stringify({ submission, imageUrls }) ?? '')
    .digest('hex')
}

/** The problems of a run, numbered in the order found, written in batches. */
class ProblemLog {
  private pending: NewProblem[] = []
  private seq = 0

  constructor(
    private readonly db: Database,
    private readonly runId: number,
  ) {}

  async add(problems: readonly OfferProblem[]): Promise<void> {
    for (const problem of problems) {
      this.pending.push({
        runId: this.runId,
        seq: ++this.seq,
        // Within the lengths the report's schema declares, however long what they quote.
        internalId: cut(problem.internal_id, MAX_PROBLEM_INTERNAL_ID),
        code: problem.code,
        field: problem.field,
        message: cut(problem.message, MAX_PROBLEM_MESSAGE),
      })
    }
    if (this.pending.length >= PROBLEM_BATCH) await this.flush()
  }

  async flush(): Promise<void> {
    const batch = this.pending
    this.pending = []
    await repository.insertProblems(this.db, batch)
  }
}

/**
 * What the applied offers became, written many to a statement, and whatever is left when the
 * offers stop, however the run then ends. A worker that dies before a batch is written leaves
 * its listings to the next run, which finds them by their external ids while their offers stay
 * in the file.
 */
class OfferMemory {
  private pending: RememberedOffer[] = []

  constructor(private readonly db: Database) {}

  async add(row: RememberedOffer): Promise<void> {
    this.pending.push(row)
    if (this.pending.length >= OFFER_BATCH) await this.flush()
  }

  async flush(): Promise<void> {
    const batch = this.pending
    this.pending = []
    await repository.saveFeedOffers(this.db, batch)
  }
}

/**
 * Imports a downloaded feed file, as docs/feeds.md describes: a first pass reads the whole file
 * (a broken file fails the run before anything changes) and guards against mass withdrawal; the
 * second maps and applies each offer; then the offers that left the file are withdrawn.
 */
export async function importFeed(deps: FeedImportDependencies, input: FeedImportInput): Promise<RunOutcome> {
  const { feed, runId, agency } = input
  const known = await repository.feedOffersOf(deps.db, feed.id)

  // Pass 1: the file is read whole, only its ids kept.
  const inFile = new Set<string>()
  try {
    for await (const offer of readYandexRealtyOffers(input.read())) {
      input.stillHeld()
      inFile.add(offer.internalId)
    }
  } catch (error) {
    if (error instanceof FeedFormatError) throw new FeedRunFailure(error.code, error.message)
    throw error
  }
  // The feed's listings it could withdraw: not those it withdrew already, nor those the agency
  // closed or withdrew itself, which stay as the agency left them whether their offers stay or go.
  const live = [...known.values()].filter((offer) => !offer.withdrawnByFeed && feedMovesFrom(offer.listingStatusId).includes(ListingStatus.Withdrawn))
  const leaving = live.filter((offer) => !inFile.has(offer.internalId))
  if (leaving.length * 2 > live.length && !feed.allowMassWithdrawal) {
    throw new FeedRunFailure(
      'mass_withdrawal_refused',
      `This file would withdraw ${leaving.length} of the feed’s ${live.length} listings, more than half of them, so nothing was changed. If that is intended, set "allow_mass_withdrawal": true on the feed (PATCH /feeds/${feed.id}) and run it again.`,
    )
  }

  // Pass 2: each offer mapped and applied, a few at once; the run confirmed as still held before
  // it starts and at every batch, so a feed deleted meanwhile makes at most a batch more.
  await input.confirmHeld()
  // From here the listings may hold part of this file: the file imported last is forgotten, so
  // that a run which stops part way (a suspension, a failure, a killed worker) is never followed
  // by one that finds that file again and, taking it for unchanged, leaves this part standing.
  // A run that ends succeeded remembers its own file.
  await repository.forgetImportedFile(deps.db, feed.id)
  const [cities, districts, elsewhere] = await Promise.all([
    deps.reference.cities(),
    deps.reference.districts(),
    repository.offersOfOtherFeeds(deps.db, agency.id, feed.id),
  ])
  const places = feedPlaces(
    cities.map((city) => ({ id: city.id, name: city.name, country: city.country, ...(city.region === null ? {} : { region: city.region }) })),
    districts,
  )
  const counts: Counts = { offers: 0, created: 0, updated: 0, unchanged: 0, withdrawn: 0, rejected: 0, errors: 0 }
  const problems = new ProblemLog(deps.db, runId)
  const memory = new OfferMemory(deps.db)
  const limit = pLimit(OFFER_CONCURRENCY)
  const photoLimit = pLimit(PHOTO_CONCURRENCY)
  const inFlight = new Set<Promise<void>>()
  let failure: Error | undefined

  try {
    for await (const offer of readYandexRealtyOffers(input.read())) {
      if (failure !== undefined) break
      input.stillHeld()
      if (counts.offers > 0 && counts.offers % OFFER_BATCH === 0) await input.confirmHeld()
      counts.offers++
      const mapped = mapOffer(offer, places, agency.country)
      // Pass 1's ids are let go as their offers are met: an id already gone is a repeat, and the
      // first offer with it decides, whether it was taken or refused. (An offer without a usable
      // id is refused for that below.)
      const identified = !mapped.problems.some((problem) => problem.code === 'missing_internal_id' || problem.code === 'invalid_internal_id')
      if (identified && !inFile.delete(mapped.internalId)) {
        counts.rejected++
        await problems.add([
          {
            internal_id: mapped.internalId,
            code: 'duplicate_internal_id',
            field: 'internal-id',
            message: 'Объявление с таким internal-id уже встречалось в этом файле выше; взято первое, это пропущено.',
          },
        ])
        continue
      }
      const refusals = mapped.problems.filter((problem) => isRefusal(problem.code))
      if (mapped.submission === null || refusals.length > 0) {
        counts.rejected++
        await problems.add(refusals)
        continue
      }
      const submission = mapped.submission
      const task = limit(() =>
        applyOffer(
          deps,
          input,
          { internalId: mapped.internalId, submission, imageUrls: mapped.imageUrls, warnings: mapped.problems },
          { known, elsewhere, memory, counts, problems, photoLimit },
        ),
      )
        .catch((error: unknown) => {
          failure ??= error instanceof Error ? error : new Error(`An offer could not be applied: ${JSON.stringify(error)}`)
        })
        .finally(() => inFlight.delete(task))
      inFlight.add(task)
      // The reader waits while the applying is behind, so the file is never read ahead unbounded.
      if (inFlight.size >= OFFER_CONCURRENCY * 2) await Promise.race(inFlight)
    }
  } catch (error) {
    // A stop met while reading (a suspension or a lost lease seen at a batch) ends the run as an
    // offer's failure does, once what the applied offers became is written below.
    failure ??= error instanceof Error ? error : new Error(`The feed could not be read: ${String(error)}`)
  } finally {
    // The offers under way end before the run goes on or stops: none is left writing behind it.
    await Promise.all(inFlight)
  }
  // What the applied offers became is remembered even when the run goes no further (its agency
  // suspended, an offer that failed): a listing the run made is the feed's from now on, withdrawn
  // when its offer leaves the file. A feed deleted meanwhile (the agency stopping it) fails these
  // rows on their foreign key: asked then, the run stops as one that lost its lease, quietly.
  try {
    await memory.flush()
  } catch (error) {
    await input.confirmHeld()
    throw error
  }
  await input.confirmHeld()
  if (failure !== undefined) throw failure

  // Offers that left the file: their listings are withdrawn (those withdrawn by a worker that
  // held this run before are counted as withdrawn by it).
  counts.withdrawn += [...known.values()].filter((offer) => offer.withdrawnByFeed && offer.lastRunId === runId).length
  for (const offer of leaving) {
    // Asked of the database before each: a feed deleted meanwhile (its listings then the agency's
    // alone, docs/feeds.md) withdraws nothing more, nor does a run another worker took over.
    await input.confirmHeld()
    if (await deps.properties.withdrawGoneOffer(agency.id, offer.propertyId)) {
      await repository.markWithdrawnByFeed(deps.db, feed.id, offer.internalId, runId)
      counts.withdrawn++
    }
  }
  await problems.flush()
  const partial = counts.rejected > 0 || counts.errors > 0
  return { status: partial ? 'partially_succeeded' : 'succeeded', detail: null, failureCode: null, counts }
}

interface ApplicableOffer {
  internalId: string
  submission: NonNullable<ReturnType<typeof mapOffer>['submission']>
  imageUrls: string[]
  /** What the mapping left out or cut: reported once the offer is taken, not when it is refused. */
  warnings: readonly OfferProblem[]
}

/** What the offers of one run share while they are applied. */
interface RunState {
  known: Map<string, repository.FeedOfferRow>
  /** The internal ids the agency's other feeds import, with the feed. */
  elsewhere: Map<string, number>
  memory: OfferMemory
  counts: Counts
  problems: ProblemLog
  photoLimit: LimitFunction
}

async function applyOffer(
  deps: FeedImportDependencies,
  input: FeedImportInput,
  offer: ApplicableOffer,
  { known, elsewhere, memory, counts, problems, photoLimit }: RunState,
): Promise<void> {
  const { feed, runId, agency } = input
  const offered = [...new Set(offer.imageUrls)]
  const imageUrls = offered.slice(0, deps.photosPerListing)
  const warnings = [...offer.warnings]
  if (deps.photos && imageUrls.length < offered.length) {
    warnings.push({
      internal_id: offer.internalId,
      code: 'too_many_images',
      field: 'image',
      message: `В объявлении ${offered.length} фото, а у объекта их может быть не больше ${deps.photosPerListing}: загружены первые ${deps.photosPerListing}.`,
    })
  }
  const reportWarnings = async () => {
    counts.errors += warnings.length
    await problems.add(warnings)
  }
  const digest = offerDigest(offer.submission, deps.photos ? imageUrls : [])
  const before = known.get(offer.internalId)
  if (before && before.contentDigest === digest && !before.withdrawnByFeed) {
    // Applied already by this same run, by a worker that lost it before recording it (a
    // takeover starts the run over): counted as that worker counted it, not as unchanged.
    if (before.lastRunId === runId) counts[before.listingCreatedAt >= input.runStartedAt ? 'created' : 'updated']++
    else counts.unchanged++
    await reportWarnings()
    return
  }
  let result: Awaited<ReturnType<PropertiesService['importByExternalId']>>
  try {
    result = await deps.properties.importByExternalId(agency, offer.internalId, offer.submission, before === undefined)
  } catch (error) {
    if (!(error instanceof ApiError) || error.statusCode >= 500) throw error
    counts.rejected++
    await problems.add(refusalOf(offer.internalId, error))
    return
  }
  await reportWarnings()
  // An external id is the agency's, one listing whichever feed brings it: the feed that applied
  // it last keeps it, so another that drops the id does not withdraw a listing this one still lists.
  const otherFeed = before === undefined ? elsewhere.get(offer.internalId) : undefined
  if (otherFeed !== undefined) {
    await repository.forgetFeedOffer(deps.db, otherFeed, offer.internalId)
    counts.errors++
    await problems.add([
      {
        internal_id: offer.internalId,
        code: 'internal_id_moved',
        field: 'internal-id',
        message: `Объект с этим internal-id раньше загружался из другого фида агентства (№ ${otherFeed}); теперь он обновляется из этого фида.`,
      },
    ])
  }
  let resubmitted = false
  if (before?.withdrawnByFeed && result.statusId === ListingStatus.Withdrawn) {
    try {
      await deps.properties.changeStatus(agency.id, result.id, ListingStatus.PendingReview)
      resubmitted = true
    } catch (error) {
      // The agency moved the listing meanwhile (closed it, say): its own move stands.
      if (!(error instanceof ApiError) || error.statusCode >= 500) throw error
    }
  }
  const photos = deps.photos
    ? await photoLimit(() => syncPhotos(deps, input, result.id, offer.internalId, imageUrls, counts, problems))
    : { complete: true, changed: false }
  const submitted = result.created || result.changed || resubmitted
  if (result.created) counts.created++
  else if (submitted || photos.changed) counts.updated++
  else counts[input.takenOver ? await countOfUnrecorded(deps, agency.id, result.id, input.runStartedAt) : 'unchanged']++

  await memory.add({
    feedId: feed.id,
    internalId: offer.internalId,
    propertyId: result.id,
    // A photo that failed is tried again next run: the offer is not remembered as done.
    contentDigest: photos.complete ? digest : `${digest}:photos-incomplete`,
    // The run whose report shows the internal check's verdict on the listing: the last that
    // sent it to the check, not one that only touched its photos.
    lastRunId: submitted || before === undefined ? runId : before.lastRunId,
    withdrawnByFeed: false,
  })
}

/**
 * How an offer of a run taken over counts that changed nothing though the feed remembered it
 * otherwise (or not at all): a worker that held this run before applied it and lost the run
 * before it recorded it (it records a batch at a time; a takeover starts the run over), when its
 * listing was made or changed since the run began, and counts as that worker counted it; else
 * its listing held it already, and it is unchanged. In a run no worker held before, such an
 * offer is unchanged: its listing changed meanwhile by the check or the agency, not by the run.
 */
async function countOfUnrecorded(
  deps: FeedImportDependencies,
  agencyId: number,
  listingId: number,
  runStartedAt: Date,
): Promise<'created' | 'updated' | 'unchanged'> {
  let listing: Awaited<ReturnType<PropertiesService['get']>>
  try {
    listing = await deps.properties.get(agencyId, listingId)
  } catch (error) {
    // The agency deleted it just now: nothing of this run is left to count.
    if (error instanceof ApiError && error.code === 'not_found') return 'unchanged'
    throw error
  }
  if (new Date(listing.created_at) >= runStartedAt) return 'created'
  return new Date(listing.updated_at) >= runStartedAt ? 'updated' : 'unchanged'
}

/** What the listings service refused, as the offer's problems: one per field error. */
function refusalOf(internalId: string, error: ApiError): OfferProblem[] {
  const fieldErrors = (error.extra.errors ?? []) as { loc: (string | number)[]; msg: string }[]
  if (error.code === 'conflict') {
    return [
      {
        internal_id: internalId,
        code: 'listing_conflict',
        field: null,
        message: 'Объект в MLS сейчас нельзя изменить (например, сделка по нему закрыта), поэтому объявление из фида к нему не применено.',
      },
    ]
  }
  if (fieldErrors.length === 0) {
    return [{ internal_id: internalId, code: 'invalid_offer', field: null, message: `Объявление не принято: ${error.message}` }]
  }
  return fieldErrors.map((fieldError) => ({
    internal_id: internalId,
    code: 'invalid_field',
    field: fieldError.loc.filter((part) => part !== 'body').join('.') || null,
    message: `Значение не принято: ${fieldError.msg}.`,
  }))
}

/**
 * Makes the listing's feed photos those of the offer, in its order: URLs not attached yet are
 * downloaded, feed photos no longer listed are removed, the rest moved to their place. Photos
 * the agency added itself, uploaded or by URL, are left alone. Whether every photo is there now,
 * and whether any was added, removed or moved.
 *
 * A listing whose photos cannot change now (its deal closed, its agency's suspension holding
 * it) keeps them as they are, and the offer gets the `listing_conflict` of a change to its
 * fields: the first change refused is the first tried, so nothing was changed before it. The
 * offer is not remembered as done, so it is reported again while it differs, as fields are.
 */
async function syncPhotos(
  deps: FeedImportDependencies,
  input: FeedImportInput,
  propertyId: number,
  internalId: string,
  urls: readonly string[],
  counts: Counts,
  problems: ProblemLog,
): Promise<{ complete: boolean; changed: boolean }> {
  const tenantId = input.agency.id
  try {
    const byUrl = await deps.images.photosByUrlOf(tenantId, propertyId)
    const bySource = new Map(byUrl.filter((photo) => photo.byFeed).map((photo) => [photo.sourceUrl, photo]))
    // The agency's own photos by URL are not the feed's to move or remove, but a URL one of
    // them was downloaded from is attached already, and not downloaded again.
    const attachedByAgency = new Set(byUrl.filter((photo) => !photo.byFeed).map((photo) => photo.sourceUrl))
    const wanted = new Set(urls)
    let changed = false
    // Asked before each change: a run that must stop (a photo waiting its turn after the stop,
    // or the next of a listing's many) starts nothing more.
    for (const photo of bySource.values()) {
      if (wanted.has(photo.sourceUrl)) continue
      input.stillHeld()
      await deps.images.remove(tenantId, photo.id)
      changed = true
    }
    let complete = true
    for (const [sortOrder, url] of urls.entries()) {
      const photo = bySource.get(url)
      if (photo) {
        if (photo.sortOrder === sortOrder) continue
        input.stillHeld()
        await deps.images.updateSortOrder(tenantId, photo.id, sortOrder)
        changed = true
        continue
      }
      if (attachedByAgency.has(url)) continue
      input.stillHeld()
      try {
        await deps.images.addFromUrl(tenantId, { propertyId, sortOrder, url, byFeed: true }, input.stopped)
        changed = true
      } catch (error) {
        // A download the stop cut short is no problem of the photo's.
        input.stillHeld()
        // The image queue full (a 503 of its own): as a photo that failed, taken at the next run.
        // Storage that cannot take photos fails the run: every photo would be downloaded and
        // processed only to be dropped.
        if (error instanceof StorageUnavailable) throw error
        const busy = error instanceof ApiError && error.code === 'unavailable'
        if (!(error instanceof ApiError) || error.code === 'conflict' || (error.statusCode >= 500 && !busy)) throw error
        complete = false
        counts.errors++
        const why = busy ? 'фотографии сейчас обрабатываются для других объявлений, попробуем при следующем запуске' : photoRefusalInWords(error)
        await problems.add([{ internal_id: internalId, code: 'image_download_failed', field: 'image', message: `Фото ${cut(url, 200)} не загружено: ${why}` }])
      }
    }
    return { complete, changed }
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'conflict') throw error
    counts.errors++
    await problems.add(refusalOf(internalId, error))
    return { complete: false, changed: false }
  }
}

/** A download that failed, in the report's words. */
const DOWNLOAD_FAILURES: Record<OutboundFailureKind, string> = {
  invalid_url: 'адрес фото не годится для загрузки (нужен http или https)',
  blocked_address: 'адрес фото ведёт во внутреннюю сеть, оттуда фото не загружаются',
  dns: 'сервер фото не найден: его имя не разрешилось',
  connection: 'не удалось соединиться с сервером фото',
  timeout: 'сервер фото не прислал его вовремя',
  too_large: 'файл фото больше допустимого размера',
  too_many_redirects: 'адрес фото перенаправляет слишком много раз',
}

/**
 * Why a photo of an offer was not taken, in Russian like the rest of the report: the images
 * service's refusal is worded in English for the API, so it is worded again from its reason.
 */
function photoRefusalInWords(error: ApiError): string {
  const why = photoRefusalOf(error)
  switch (why?.kind) {
    case 'download':
      return DOWNLOAD_FAILURES[why.failure]
    case 'http_status':
      return `сервер фото ответил кодом ${why.status} вместо фото`
    case 'empty':
      return 'сервер фото прислал пустой файл'
    case 'not_a_photo':
      return why.webPage
        ? 'по адресу веб-страница, а не фото JPEG, PNG или WebP'
        : `по адресу не фото JPEG, PNG или WebP${why.detected ? `, а ${why.detected}` : ''}`
    case 'too_large':
      return `файл фото больше ${megabytes(why.maxBytes)}, а больше не принимается`
    case 'unreadable':
      return 'файл не читается как фото: он повреждён или обрезан'
    case 'too_many_pixels':
      return `фото ${why.width}×${why.height} пикселей, а принимается не больше ${(why.maxPixels / 1e6).toLocaleString('ru-RU')} млн пикселей`
    case 'too_many_photos':
      return `у объекта уже ${why.most} фото, больше нельзя`
    default:
      return 'фото не принято'
  }
}

const megabytes = (bytes: number) => (bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} МБ` : `${bytes.toLocaleString('ru-RU')} байт`)
