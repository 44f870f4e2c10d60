/**
 * (i) A mirror replaying the whole change feed from its start: `GET /mls/changes?limit=1000`,
 * page after page over one connection, as a consumer that copies the catalogue would, until
 * `has_more` is false. Changes per second, and how long the whole history took (target: a
 * million listings' feed in under two minutes). The feed's pages are never cached, so every
 * page runs its statement.
 */
import type { Child } from './children.js'

const PAGE = 1000

export interface FeedReplayFigures {
  page_size: number
  pages: number
  changes: number
  upserts: number
  removes: number
  bytes: number
  seconds: number
  changes_per_second: number
  /** The slowest page, ms: a mirror's longest wait. */
  slowest_page_ms: number
}

interface ChangesPage {
  items: { op: 'upsert' | 'remove' }[]
  next_cursor: string
  has_more: boolean
}

export async function runFeedReplay(service: Child): Promise<FeedReplayFigures> {
  process.stderr.write('(i) replaying the change feed from its start… ')
  const started = performance.now()
  let cursor: string | undefined
  let pages = 0
  let upserts = 0
  let removes = 0
  let bytes = 0
  let slowest = 0
  for (;;) {
    const pageStarted = performance.now()
    const response = await fetch(`${service.url}/mls/changes?limit=${PAGE}${cursor ? `&after=${cursor}` : ''}`)
    const body = await response.text()
    if (!response.ok) throw new Error(`(i) /mls/changes answered ${response.status}: ${body.slice(0, 500)}`)
    const page = JSON.parse(body) as ChangesPage
    slowest = Math.max(slowest, performance.now() - pageStarted)
    pages++
    bytes += body.length
    for (const item of page.items) {
      if (item.op === 'upsert') upserts++
      else removes++
    }
    cursor = page.next_cursor
    if (!page.has_more) break
  }
  const seconds = (performance.now() - started) / 1000
  const changes = upserts + removes
  process.stderr.write(`${changes} changes in ${seconds.toFixed(1)} s\n`)
  return {
    page_size: PAGE,
    pages,
    changes,
    upserts,
    removes,
    bytes,
    seconds: Number(seconds.toFixed(1)),
    changes_per_second: Number((changes / seconds).toFixed(1)),
    slowest_page_ms: Number(slowest.toFixed(1)),
  }
}
