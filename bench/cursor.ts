/**
 * (j) Pages by cursor cost the same at any depth: the catalogue's first page (newest first, 50
 * items) against the page 10,000 pages deep reached by `next_cursor` (500,000 listings in on a
 * million; the deepest the seed allows when it is smaller), as interleaved rounds (first, deep,
 * first, deep…) whose latency ratios are judged on their median (target <= 2×).
 *
 * Both are single URLs, which the service would answer from its cache of serialised answers
 * after the first time: (j) measures a service of its own started with that cache off
 * (CATALOGUE_CACHE_MB=0), so every request runs its statements. It runs after every other
 * scenario, once the main service is stopped (PGlite admits one process). One connection: the
 * latency is then what one page costs, not how long it queued behind the others.
 */
import { startChild } from './children.js'
import { measure, warmUp, type Scenario, type ScenarioResult } from './load.js'
import { median } from './rounds.js'

/** The page depth the issue asks for, and the page size. */
const TARGET_PAGES = 10_000
const LIMIT = 50
const CONNECTIONS = 1

export interface CursorRound {
  first: ScenarioResult
  deep: ScenarioResult
  /** The deep page's mean latency over the first page's, this round. */
  ratio: number
}

export interface CursorFigures {
  limit: number
  /** Which page the deep one is (1 is the first), and how many listings precede it. */
  deep_page: number
  rows_before: number
  /** Seconds the walk to it took, page by page over HTTP. */
  walk_seconds: number
  connections: number
  seconds_per_run: number
  rounds: CursorRound[]
  ratio_median: number
  ratio_min: number
  ratio_max: number
  first_latency_avg_median_ms: number
  deep_latency_avg_median_ms: number
}

export async function runCursorPages(serviceEnv: NodeJS.ProcessEnv, options: { rounds: number; seconds: number }): Promise<CursorFigures> {
  const service = await startChild('service (cache off)', 'bench/serve.ts', { ...serviceEnv, CATALOGUE_CACHE_MB: '0' })
  try {
    const firstPath = `/mls/properties?limit=${LIMIT}`
    process.stderr.write(`(j) walking by cursor towards page ${TARGET_PAGES}… `)
    const started = performance.now()
    let page = await getPage(service.url + firstPath)
    // A full page: the last one may be short.
    const target = Math.min(TARGET_PAGES, Math.floor(page.total / LIMIT))
    let cursor: string | null = null
    let deepPageNumber = 1
    while (deepPageNumber < target && page.next_cursor !== null) {
      cursor = page.next_cursor
      page = await getPage(`${service.url}${firstPath}&cursor=${cursor}`)
      deepPageNumber++
    }
    if (cursor === null) throw new Error('(j) needs a catalogue of more than one page')
    const deepPath = `${firstPath}&cursor=${cursor}`
    const walkSeconds = (performance.now() - started) / 1000
    process.stderr.write(`page ${deepPageNumber} (${page.items.length} items) in ${walkSeconds.toFixed(1)} s\n`)

    const first: Scenario = { id: 'j', title: `GET /mls/properties, first page`, baseUrl: service.url, next: () => ({ method: 'GET', path: firstPath }) }
    const deep: Scenario = {
      id: 'j',
      title: `GET /mls/properties, page ${deepPageNumber} by cursor`,
      baseUrl: service.url,
      next: () => ({ method: 'GET', path: deepPath }),
    }
    await warmUp(first, CONNECTIONS, 2)
    await warmUp(deep, CONNECTIONS, 2)
    const rounds: CursorRound[] = []
    for (let round = 1; round <= options.rounds; round++) {
      process.stderr.write(`(j) round ${round} of ${options.rounds}: ${options.seconds} s each… `)
      const firstResult = await measure(first, CONNECTIONS, options.seconds)
      const deepResult = await measure(deep, CONNECTIONS, options.seconds)
      const ratio = round4(deepResult.latency_avg_ms / firstResult.latency_avg_ms)
      rounds.push({ first: firstResult, deep: deepResult, ratio })
      process.stderr.write(`×${ratio.toFixed(2)}\n`)
    }
    const ratios = rounds.map((round) => round.ratio)
    return {
      limit: LIMIT,
      deep_page: deepPageNumber,
      rows_before: (deepPageNumber - 1) * LIMIT,
      walk_seconds: Number(walkSeconds.toFixed(1)),
      connections: CONNECTIONS,
      seconds_per_run: options.seconds,
      rounds,
      ratio_median: median(ratios),
      ratio_min: Math.min(...ratios),
      ratio_max: Math.max(...ratios),
      first_latency_avg_median_ms: median(rounds.map((round) => round.first.latency_avg_ms)),
      deep_latency_avg_median_ms: median(rounds.map((round) => round.deep.latency_avg_ms)),
    }
  } finally {
    await service.stop()
  }
}

async function getPage(url: string): Promise<{ items: unknown[]; total: number; next_cursor: string | null }> {
  const response = await fetch(url)
  const body = await response.text()
  if (!response.ok) throw new Error(`(j) ${url} answered ${response.status}: ${body.slice(0, 500)}`)
  return JSON.parse(body) as { items: unknown[]; total: number; next_cursor: string | null }
}

const round4 = (value: number) => Number(value.toFixed(4))
