/**
 * (feed) An agency's 100,000-offer Yandex.Realty feed imported by a feed worker process (photos
 * off), served by a local server as the generator writes it: offers imported per second (target:
 * 1,000), the worker's peak RSS over its resident size before the run (the bound: 150
 * MiB), and the catalogue's p99 while the import runs against the same catalogue idle (target:
 * within 2×). Needs PostgreSQL: the worker is a process of its own.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { generateYandexFeed } from '../test/helpers/yandex-feed.js'
import { startChild, type Child } from './children.js'
import { measure, type ScenarioResult } from './load.js'
import { readMemory, sampleRss } from './memory.js'
import { benchApiKey } from './data.js'
import { catalogueSearch } from './requests.js'

/** The 100,000; BENCH_FEED_OFFERS sets fewer for a quick look. */
export const FEED_OFFERS = Number(process.env.BENCH_FEED_OFFERS ?? 100_000)
/** The feed worker's old-space cap, MiB (NODE_OPTIONS=--max-old-space-size). */
export const FEED_WORKER_HEAP_MIB = 1024
/** The agency whose feed it is: the first bench tenant. */
const FEED_TENANT = 1

export interface FeedImportFigures {
  offers: number
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

interface Run {
  id: number
  status: string
  started_at: string
  finished_at: string | null
  counts: Record<string, number>
}

export async function runFeedImport(service: Child, env: NodeJS.ProcessEnv, load: { connections: number; duration: number }): Promise<FeedImportFigures> {
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
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const headers = { 'x-api-key': benchApiKey(FEED_TENANT), ...(body === undefined ? {} : { 'content-type': 'application/json' }) }
    const response = await fetch(`${service.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const text = await response.text()
    if (!response.ok) throw new Error(`(feed) ${method} ${path} answered ${response.status}: ${text.slice(0, 500)}`)
    return (text === '' ? undefined : JSON.parse(text)) as T
  }
  const catalogue = { id: 'b' as const, title: 'GET /mls/properties, random filters', baseUrl: service.url, next: catalogueSearch }
  let feedId: number | undefined
  try {
    process.stderr.write('(feed) the catalogue idle… ')
    const idle = await measure(catalogue, load.connections, load.duration)
    process.stderr.write(`p99 ${idle.latency_p99_ms} ms\n`)
    // A far schedule: the run below is the only one.
    const feed = await api<{ id: number }>('POST', '/feeds', { url: feedUrl, format: 'yandex_realty', schedule: 10080 })
    feedId = feed.id
    const before = worker.pid === undefined ? undefined : readMemory(worker.pid)
    const rss = worker.pid === undefined ? undefined : sampleRss(worker.pid, 200)
    // A new feed is due at once: the worker's scheduler starts its first run within a poll.
    let run: Run | undefined
    for (const deadline = Date.now() + 60_000; !run;) {
      if (Date.now() > deadline) throw new Error('(feed) the worker did not start the feed’s first run within a minute')
      run = (await api<{ items: Run[] }>('GET', `/feeds/${feed.id}/runs`)).items[0]
      if (!run) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    process.stderr.write(`(feed) importing ${FEED_OFFERS} offers, the catalogue loaded meanwhile… `)
    const during = await measure(catalogue, load.connections, load.duration)
    while (run.status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 500))
      run = await api<Run>('GET', `/feeds/${feed.id}/runs/${run.id}?limit=1`)
    }
    const peak = rss?.stop()
    const seconds = (Date.parse(run.finished_at!) - Date.parse(run.started_at)) / 1000
    const offersPerSecond = Math.round((run.counts.offers ?? 0) / seconds)
    process.stderr.write(`${run.status}, ${seconds.toFixed(1)} s, ${offersPerSecond} offers/s\n`)
    const mib = (kib: number | undefined) => (kib === undefined ? null : Math.round(kib / 1024))
    return {
      offers: FEED_OFFERS,
      status: run.status,
      counts: run.counts,
      seconds: Number(seconds.toFixed(1)),
      offers_per_second: offersPerSecond,
      worker_rss_before_mib: mib(before?.rssKiB),
      worker_rss_peak_mib: mib(peak?.maxKiB),
      worker_rss_growth_mib: before && peak ? mib(peak.maxKiB - before.rssKiB) : null,
      catalogue_idle: idle,
      catalogue_during: during,
      catalogue_p99_ratio: Number((during.latency_p99_ms / Math.max(1, idle.latency_p99_ms)).toFixed(2)),
    }
  } finally {
    // The listings stay (a rerun with --skip-seed replaces them unchanged); the feed goes, so reruns stay under the agency's limit.
    if (feedId !== undefined) await api('DELETE', `/feeds/${feedId}`).catch(() => undefined)
    await worker.stop()
    await new Promise((resolve) => feedServer.close(resolve))
  }
}
