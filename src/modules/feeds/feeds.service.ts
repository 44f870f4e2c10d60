import type { Config } from '../../config.js'
import type { Database } from '../../db/client.js'
import { ApiError, FEED_NOT_FOUND, FEED_RUN_NOT_FOUND } from '../../lib/errors.js'
import { invalidAddressError, OutboundError, type OutboundClient } from '../../lib/outbound-http.js'
import { toOffsetTimestamp } from '../../lib/time.js'
import type { EventsService } from '../events/events.service.js'
import type { ImagesService } from '../images/images.service.js'
import type { PropertiesService } from '../properties/properties.service.js'
import type { ReferenceService } from '../reference/reference.service.js'
import type { TenantsService } from '../tenants/tenants.service.js'
import { downloadFeed, FeedRunFailure } from './feed-download.js'
import { importFeed } from './feed-import.js'
import * as repository from './feeds.repository.js'
import type { RunOutcome, RunRow } from './feeds.repository.js'
import { DEFAULT_SCHEDULE_MINUTES, type Feed, type FeedCreate, type FeedRunReport, type FeedRunSummary, type FeedUpdate } from './feeds.schemas.js'

/** Feeds per agency: a CRM exports one file, a few cover agencies with several offices. */
export const MAX_FEEDS_PER_TENANT = 5
/**
 * How long a worker holds a run without renewing its lease. It renews every third of it while
 * it works; a worker that dies leaves the run to another once this has passed.
 */
export const RUN_LEASE_MS = 60_000
/** Feeds scheduled per statement. */
const SCHEDULE_BATCH = 100

export type { RunRow } from './feeds.repository.js'
export { FEED_RUNS_CHANNEL } from './feeds.repository.js'

export interface FeedsOptions {
  allowPrivateNetwork: boolean
  feeds: Config['feeds']
  /** IMAGE_MAX_PER_PROPERTY: an offer's photos past it are not taken. */
  photosPerListing: number
}

export function toRunSummary(row: RunRow): FeedRunSummary {
  return {
    id: row.id,
    feed_id: row.feedId,
    status: row.status,
    trigger: row.trigger,
    started_at: toOffsetTimestamp(row.startedAt),
    finished_at: row.finishedAt === null ? null : toOffsetTimestamp(row.finishedAt),
    detail: row.detail,
    failure_code: row.failureCode,
    counts: {
      offers: row.offers,
      created: row.created,
      updated: row.updated,
      unchanged: row.unchanged,
      withdrawn: row.withdrawn,
      rejected: row.rejected,
      errors: row.errors,
    },
  }
}

function toFeed(row: repository.FeedRow, lastRun: RunRow | undefined): Feed {
  return {
    id: row.id,
    url: row.url,
    format: row.format,
    schedule: row.scheduleMinutes,
    allow_mass_withdrawal: row.allowMassWithdrawal,
    next_run_at: toOffsetTimestamp(row.nextRunAt),
    created_at: toOffsetTimestamp(row.createdAt),
    updated_at: toOffsetTimestamp(row.updatedAt),
    last_run: lastRun ? toRunSummary(lastRun) : null,
  }
}

/** Thrown inside a run whose lease another worker has taken: the run is theirs now. */
class LeaseLost extends Error {
  override name = 'LeaseLost'
}

/**
 * An agency's feeds and their runs: the only writer of feeds, feed_runs, feed_run_problems and
 * feed_offers. A run changes listings only through the properties and images services, as the
 * agency's own requests would. See docs/feeds.md.
 */
export class FeedsService {
  constructor(
    private readonly db: Database,
    private readonly outbound: OutboundClient,
    private readonly events: EventsService,
    private readonly tenants: TenantsService,
    private readonly properties: PropertiesService,
    private readonly images: ImagesService,
    private readonly reference: ReferenceService,
    private readonly options: FeedsOptions,
  ) {}

  async create(tenantId: number, input: FeedCreate): Promise<Feed> {
    const url = await this.checkUrl(input.url)
    const row = await this.db.transaction(async (tx) => {
      if ((await repository.countFeedsLocked(tx, tenantId)) >= MAX_FEEDS_PER_TENANT) {
        throw ApiError.conflict(`An agency may have at most ${MAX_FEEDS_PER_TENANT} feeds; delete one first.`)
      }
      return repository.insertFeed(tx, {
        tenantId,
        url,
        format: input.format,
        scheduleMinutes: input.schedule ?? DEFAULT_SCHEDULE_MINUTES,
        allowMassWithdrawal: input.allow_mass_withdrawal ?? false,
      })
    })
    return toFeed(row, undefined)
  }

  async list(tenantId: number, page: { limit: number; offset: number }) {
    const { rows, total } = await repository.pageOfFeeds(this.db, tenantId, page)
    const runs = await repository.lastRuns(
      this.db,
      rows.map((row) => row.id),
    )
    return { items: rows.map((row) => toFeed(row, runs.get(row.id))), total, limit: page.limit, offset: page.offset }
  }

  async get(tenantId: number, id: number): Promise<Feed> {
    const row = await this.find(tenantId, id)
    return toFeed(row, (await repository.lastRuns(this.db, [id])).get(id))
  }

  /**
   * Changes the fields given. A new URL forgets the validators of the old one's file (the
   * next run downloads the file whole); a new schedule counts from now.
   */
  async update(tenantId: number, id: number, input: FeedUpdate): Promise<Feed> {
    const url = input.url === undefined ? undefined : await this.checkUrl(input.url)
    const current = await this.find(tenantId, id)
    const row = await repository.updateFeed(this.db, tenantId, id, {
      ...(url === undefined || url === current.url ? {} : { url, etag: null, lastModified: null, contentDigest: null }),
      ...(input.format === undefined ? {} : { format: input.format }),
      ...(input.schedule === undefined || input.schedule === current.scheduleMinutes
        ? {}
        : { scheduleMinutes: input.schedule, nextRunAt: new Date(Date.now() + input.schedule * 60_000) }),
      ...(input.allow_mass_withdrawal === undefined ? {} : { allowMassWithdrawal: input.allow_mass_withdrawal }),
    })
    if (!row) throw ApiError.notFound(FEED_NOT_FOUND)
    return toFeed(row, (await repository.lastRuns(this.db, [id])).get(id))
  }

  /** Deletes the feed, its runs and its memory of offers; the listings it brought in stay the agency's. */
  async remove(tenantId: number, id: number): Promise<void> {
    if (!(await repository.deleteFeed(this.db, tenantId, id))) throw ApiError.notFound(FEED_NOT_FOUND)
  }

  /** Starts a run now (a worker takes it at once); a 409 while one is under way. */
  async startRun(tenantId: number, id: number): Promise<FeedRunSummary> {
    await this.find(tenantId, id)
    const run = await repository.insertRun(this.db, { feedId: id, tenantId, trigger: 'manual' })
    if (!run) throw ApiError.conflict('A run of this feed is already under way; wait for it to finish (GET /feeds/{id}/runs).')
    return toRunSummary(run)
  }

  async runs(tenantId: number, id: number, page: { limit: number; offset: number }) {
    await this.find(tenantId, id)
    const { rows, total } = await repository.pageOfRuns(this.db, tenantId, id, page)
    return { items: rows.map(toRunSummary), total, limit: page.limit, offset: page.offset }
  }

  async report(tenantId: number, id: number, runId: number, page: { limit: number; offset: number }): Promise<FeedRunReport> {
    const run = await repository.findRun(this.db, tenantId, id, runId)
    if (!run) throw ApiError.notFound(FEED_RUN_NOT_FOUND)
    const { rows, total } = await repository.pageOfProblems(this.db, runId, page)
    return {
      ...toRunSummary(run),
      problems: {
        items: rows.map((row) => ({ internal_id: row.internalId, code: row.code, field: row.field, message: row.message })),
        total,
        limit: page.limit,
        offset: page.offset,
      },
    }
  }

  // -------------------------------------------------------------------------------------
  // For the worker (feed-runs.job.ts).

  /** Starts the runs of feeds that are due; how many. */
  scheduleDueRuns(): Promise<number> {
    return repository.scheduleDueRuns(this.db, SCHEDULE_BATCH)
  }

  /** Retention: deletes up to `limit` problems of runs finished more than `days` ago, or once they have none, up to `limit` such runs; each feed's newest kept. How many rows. */
  async forgetOldRuns(days: number, limit: number): Promise<number> {
    // Their problems first, a batch at a time; a run once it has none left.
    const problems = await repository.deleteOldRunsProblems(this.db, days, limit)
    return problems > 0 ? problems : repository.deleteOldRuns(this.db, days, limit)
  }

  /** Takes a run whose lease is free or lapsed, for `owner`. */
  claimRun(owner: string): Promise<RunRow | undefined> {
    return repository.claimRun(this.db, owner, RUN_LEASE_MS)
  }

  /**
   * Carries out a claimed run to its end and records it, with the `feed.run_finished` event.
   * The lease is renewed while it works; once lost, the run stops where it is and leaves the
   * recording to the worker that took it over. Once `signal` is aborted (the worker stops), it
   * stops too and lets go of the run, which another worker starts over.
   */
  async execute(run: RunRow, owner: string, signal?: AbortSignal): Promise<void> {
    let lost = false
    // Stops the run where it is, the download included: its lease lost, or the worker stopping.
    const letGo = new AbortController()
    const onStop = () => letGo.abort()
    signal?.addEventListener('abort', onStop, { once: true })
    if (signal?.aborted) letGo.abort()
    const renew = async () => {
      if (await repository.renewLease(this.db, run.id, owner, RUN_LEASE_MS)) return
      lost = true
      letGo.abort()
    }
    // A renewal that fails is tried again at the next tick; the lease outlasts two of them.
    const renewal = setInterval(() => void renew().catch(() => undefined), RUN_LEASE_MS / 3)
    renewal.unref()
    // Renewed at once where a step must know the run is still this worker's (see FeedImportInput).
    const confirmHeld = async () => {
      if (!letGo.signal.aborted) await renew()
      if (letGo.signal.aborted) throw new LeaseLost()
    }
    try {
      // An earlier holder's partial report is dropped: the run starts over (every step is idempotent).
      await repository.forgetProblems(this.db, run.id)
      const outcome = await this.carryOut(
        run,
        letGo.signal,
        () => {
          if (letGo.signal.aborted) throw new LeaseLost()
        },
        confirmHeld,
      )
      await this.finish(run, owner, outcome)
    } catch (error) {
      // Whatever the stop broke (a download cut short shows as its failure) is not the run's outcome.
      if (!(error instanceof LeaseLost) && !letGo.signal.aborted) throw error
      if (!lost) await repository.releaseLease(this.db, run.id, owner)
    } finally {
      clearInterval(renewal)
      signal?.removeEventListener('abort', onStop)
    }
  }

  /**
   * Ends a run that failed to run (an unexpected error), so it does not stay `running` until
   * its lease lapses and fail again there.
   */
  async failRun(run: RunRow, owner: string, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error)
    await this.finish(run, owner, {
      status: 'failed',
      detail: `The run stopped on an internal error; the service’s operators have it in their logs. (${message.slice(0, 300)})`,
      failureCode: 'internal_error',
      counts: { offers: 0, created: 0, updated: 0, unchanged: 0, withdrawn: 0, rejected: 0, errors: 0 },
    })
  }

  private async carryOut(
    run: RunRow,
    stopped: AbortSignal,
    stillHeld: () => void,
    confirmHeld: () => Promise<void>,
  ): Promise<RunOutcome & { file?: { url: string; etag: string | null; lastModified: string | null; digest: string } }> {
    const failed = (failure: FeedRunFailure): RunOutcome => ({
      status: 'failed',
      detail: failure.message,
      failureCode: failure.code,
      counts: { offers: 0, created: 0, updated: 0, unchanged: 0, withdrawn: 0, rejected: 0, errors: 0 },
    })
    const feed = await repository.findFeedById(this.db, run.feedId)
    const agency = await this.tenants.actingAgency(run.tenantId)
    const suspended = () => new FeedRunFailure('agency_suspended', 'The agency is suspended: its feeds do not run until it is unsuspended.')
    if (!feed || !agency) return failed(suspended())
    // Asked again wherever the run asks whether it is still this worker's (before its first offer,
    // at every batch, before each withdrawal): a suspension that lands during the download or
    // the import stops it there, and the agency's listings stay as the suspension holds them.
    const confirmActing = async () => {
      await confirmHeld()
      if (!(await this.tenants.actingAgency(run.tenantId))) throw suspended()
    }
    try {
      const download = await downloadFeed(
        this.outbound,
        feed.url,
        { etag: feed.etag, lastModified: feed.lastModified, contentDigest: feed.contentDigest },
        {
          maxBytes: this.options.feeds.maxBytes,
          timeoutMs: this.options.feeds.downloadTimeoutMs,
          httpsOnly: !this.options.allowPrivateNetwork,
          signal: stopped,
        },
      )
      if (!download.changed) {
        return {
          status: 'unchanged',
          detail: null,
          failureCode: null,
          counts: { offers: 0, created: 0, updated: 0, unchanged: 0, withdrawn: 0, rejected: 0, errors: 0 },
        }
      }
      try {
        stillHeld()
        const outcome = await importFeed(
          {
            db: this.db,
            properties: this.properties,
            images: this.images,
            reference: this.reference,
            photos: this.options.feeds.photos,
            photosPerListing: this.options.photosPerListing,
          },
          {
            feed,
            runId: run.id,
            runStartedAt: run.startedAt,
            takenOver: run.claims > 1,
            agency,
            read: () => download.read(),
            stillHeld,
            stopped,
            confirmHeld: confirmActing,
          },
        )
        return { ...outcome, file: { url: feed.url, etag: download.etag, lastModified: download.lastModified, digest: download.digest } }
      } finally {
        await download.discard()
      }
    } catch (error) {
      // A download the stop cut short is not a failure of the feed's.
      stillHeld()
      if (error instanceof FeedRunFailure) return failed(error)
      throw error
    }
  }

  private async finish(
    run: RunRow,
    owner: string,
    outcome: RunOutcome & { file?: { url: string; etag: string | null; lastModified: string | null; digest: string } },
  ): Promise<void> {
    await this.db.transaction(async (tx) => {
      const finished = await repository.finishRun(tx, run.id, owner, outcome)
      if (!finished) return
      // A file imported whole is not read again until it changes. One with problems is: an offer
      // refused for a city the service did not know, or a photo that failed, is tried again at the
      // next run even if the file stays the same.
      if (outcome.file) await repository.rememberImportedFile(tx, run.feedId, outcome.file.url, outcome.status === 'succeeded' ? outcome.file : null)
      await this.events.record(tx, { type: 'feed.run_finished', tenantId: run.tenantId, data: toRunSummary(finished) })
    })
  }

  private async find(tenantId: number, id: number): Promise<repository.FeedRow> {
    const row = await repository.findFeed(this.db, tenantId, id)
    if (!row) throw ApiError.notFound(FEED_NOT_FOUND)
    return row
  }

  /** https (http only with ALLOW_PRIVATE_NETWORK), no credentials, a public host; checked again at every download. */
  private async checkUrl(raw: string): Promise<string> {
    try {
      const url = await this.outbound.checkUrl(raw)
      if (url.protocol !== 'https:' && !this.options.allowPrivateNetwork) throw invalidAddressError('url', 'Invalid feed url', 'must use https')
    } catch (error) {
      if (error instanceof OutboundError) throw invalidAddressError('url', 'Invalid feed url', error)
      throw error
    }
    return raw
  }
}
