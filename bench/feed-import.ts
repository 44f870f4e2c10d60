/**
 * (feed) An agency's 100,000-offer Yandex.Realty feed imported by a feed worker process (photos
 * off), served by a local server as the generator writes it: offers imported per second (target:
 * 1,000), the worker's peak RSS over its resident size before the run (the bound: 150
 * MiB), and the catalogue's p99 while the import runs against the same catalogue idle (target:
 * within 2×), each the median of `--rounds` imports. Needs PostgreSQL: the worker is a process
 * of its own.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { generateYandexFeed } from '../test/helpers/yandex-feed.js'
import { startChild, type Child } from './children.js'
import { measure, type ScenarioResult } from './load.js'
import { readMemory, sampleRss } from './memory.js'
import { benchApiKey } from './data.js'
import { catalogueSearch } from './requests.js'
import { median } from './rounds.js'

/** The 100,000; BENCH_FEED_OFFERS sets fewer for a quick look. */
export const FEED_OFFERS = Number(process.env.BENCH_FEED_OFFERS ?? 100_000)
/** The feed worker's old-space cap, MiB (NODE_OPTIONS=--max-old-space-size). */
export const FEED_WORKER_HEAP_MIB = 1024
/** The agency whose feed it is: the first bench tenant. */
const FEED_TENANT = 1

/** One import of the whole feed into an agency without it, and the catalogue idle just before and during it. */
export interface FeedImportRound {
  status: string
  counts: Record<string, number>
  seconds: number
  offers_per_second: number
  worker_rss_before_mib: number | null
  worker_rss_peak_mib: number | null
  worker_rss_growth_mib: number | null
  catalogue_idle: ScenarioResult
  catalogue_during: ScenarioResult
  /** During / idle p99. */
  catalogue_p99_ratio: number
}

/** The rounds and their medians, which the targets are judged on. */
export interface FeedImportFigures {
  offers: number
  rounds: FeedImportRound[]
  /** 'failed' if any round's run failed, else the last round's status. */
  status: string
  offers_per_second_median: number
  /** Null when the worker's memory could not be read. */
  worker_rss_growth_median_mib: number | null
  catalogue_p99_ratio_median: number
}

interface Run {
  id: number
  status: string
  started_at: string
  finished_at: string | null
  counts: Record<string, number>
}

/**
 * `rounds` imports of the same feed, each into an agency without it: the catalogue searched for
 * `roundSeconds` idle, then the feed created (due at once) and the catalogue searched again for
 * `roundSeconds` while its run goes on; once the run is over, the feed and its listings are
 * deleted for the next round. The during/idle ratio of each round pairs two samples taken a
 * minute apart, so the figure judged is the median of the rounds, as for the other ratios.
 */
export async function runFeedImport(
  service: Child,
  env: NodeJS.ProcessEnv,
  load: { connections: number; rounds: number; roundSeconds: number; databaseUrl: string },
): Promise<FeedImportFigures> {
  const feedServer = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/xml; charset=utf-8' })
    void pipeline(Readable.from(generateYandexFeed(FEED_OFFERS, { seed: 1 })), response).catch(() => response.destroy())
  })
  await new Promise<void>((resolve) => feedServer.listen(0, '127.0.0.1', resolve))
  const feedUrl = `http://127.0.0.1:${(feedServer.address() as AddressInfo).port}/feed.xml`
  // The worker's old space capped at 1 GiB, as Node sizes it by default on a machine of 4 GiB:
  // on this one's 24 GiB Node sizes it at 4 GiB and collects so lazily that the RSS measures
  // garbage not yet collected (168 MiB more, against 55 MiB with the cap: docs/performance.md).
  const workerEnv = { ...env, NODE_OPTIONS: `${env.NODE_OPTIONS ?? ''} --max-old-space-size=${FEED_WORKER_HEAP_MIB}`.trim() }
  const worker = await startChild('feed-worker', 'bench/feed-worker.ts', { ...workerEnv, FEED_PHOTOS: 'false', FEED_POLL_INTERVAL_MS: '200' })
  const database = new pg.Client({ connectionString: load.databaseUrl })
  await database.connect()
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const headers = { 'x-api-key': benchApiKey(FEED_TENANT), ...(body === undefined ? {} : { 'content-type': 'application/json' }) }
    const response = await fetch(`${service.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const text = await response.text()
    if (!response.ok) throw new Error(`(feed) ${method} ${path} answered ${response.status}: ${text.slice(0, 500)}`)
    return (text === '' ? undefined : JSON.parse(text)) as T
  }
  // The feed's listings, left by an earlier bench on the same database or by the round before.
  const forgetImportedListings = () => database.query('delete from properties where tenant_id = $1 and external_id is not null', [FEED_TENANT])
  const catalogue = { id: 'b' as const, title: 'GET /mls/properties, random filters', baseUrl: service.url, next: catalogueSearch }
  const rounds: FeedImportRound[] = []
  try {
    await forgetImportedListings()
    for (let round = 1; round <= load.rounds; round++) {
      process.stderr.write(`(feed) round ${round} of ${load.rounds}: the catalogue idle… `)
      const idle = await measure(catalogue, load.connections, load.roundSeconds)
      process.stderr.write(`p99 ${idle.latency_p99_ms} ms; `)
      // A far schedule: the run below is the feed's only one.
      const feed = await api<{ id: number }>('POST', '/feeds', { url: feedUrl, format: 'yandex_realty', schedule: 10080 })
      try {
        rounds.push(await importOnce(feed.id, idle))
      } finally {
        await api('DELETE', `/feeds/${feed.id}`)
        await forgetImportedListings()
      }
    }
  } finally {
    await database.end()
    await worker.stop()
    await new Promise((resolve) => feedServer.close(resolve))
  }
  const growths = rounds.map((round) => round.worker_rss_growth_mib)
  return {
    offers: FEED_OFFERS,
    rounds,
    status: rounds.some((round) => round.status === 'failed') ? 'failed' : rounds.at(-1)!.status,
    offers_per_second_median: median(rounds.map((round) => round.offers_per_second)),
    worker_rss_growth_median_mib: growths.every((growth) => growth !== null) ? median(growths) : null,
    catalogue_p99_ratio_median: median(rounds.map((round) => round.catalogue_p99_ratio)),
  }

  async function importOnce(feedId: number, idle: ScenarioResult): Promise<FeedImportRound> {
    const before = worker.pid === undefined ? undefined : readMemory(worker.pid)
    const rss = worker.pid === undefined ? undefined : sampleRss(worker.pid, 200)
    // A new feed is due at once: the worker's scheduler starts its first run within a poll.
    let run: Run | undefined
    for (const deadline = Date.now() + 60_000; !run;) {
      if (Date.now() > deadline) throw new Error('(feed) the worker did not start the feed’s first run within a minute')
      run = (await api<{ items: Run[] }>('GET', `/feeds/${feedId}/runs`)).items[0]
      if (!run) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    process.stderr.write(`importing ${FEED_OFFERS} offers, the catalogue loaded meanwhile… `)
    const during = await measure(catalogue, load.connections, load.roundSeconds)
    while (run.status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 500))
      run = await api<Run>('GET', `/feeds/${feedId}/runs/${run.id}?limit=1`)
    }
    const peak = rss?.stop()
    const seconds = (Date.parse(run.finished_at!) - Date.parse(run.started_at)) / 1000
    const offersPerSecond = Math.round((run.counts.offers ?? 0) / seconds)
    const ratio = Number((during.latency_p99_ms / Math.max(1, idle.latency_p99_ms)).toFixed(2))
    process.stderr.write(`${run.status}, ${seconds.toFixed(1)} s, ${offersPerSecond} offers/s; p99 ${during.latency_p99_ms} ms (×${ratio})\n`)
    const mib = (kib: number | undefined) => (kib === undefined ? null : Math.round(kib / 1024))
    return {
      status: run.status,
      counts: run.counts,
      seconds: Number(seconds.toFixed(1)),
      offers_per_second: offersPerSecond,
      worker_rss_before_mib: mib(before?.rssKiB),
      worker_rss_peak_mib: mib(peak?.maxKiB),
      worker_rss_growth_mib: before && peak ? mib(peak.maxKiB - before.rssKiB) : null,
      catalogue_idle: idle,
      catalogue_during: during,
      catalogue_p99_ratio: ratio,
    }
  }
}
