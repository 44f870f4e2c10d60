import { createHash } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { CatalogueSnapshot } from './catalogue-versions.js'

/** A catalogue answer ready to send: its JSON bytes and their ETag. */
export interface CatalogueAnswer {
  body: Buffer
  etag: string
}

interface Entry extends CatalogueAnswer {
  /** The city whose counter the answer depends on; undefined for every city. */
  cityId: number | undefined
  /** That counter when the answer's queries started. */
  version: number
}

interface Produced {
  body: Buffer
  cityId: number | undefined
}

/**
 * Catalogue answers kept in this process for as long as the catalogue counters they depend on
 * stay where they were (catalogue-versions.ts), so an answer is never older than the last change
 * committed before the request came. Bounded in bytes, least recently used first out. Every
 * API process keeps its own: nothing to share, nothing to invalidate across processes.
 */
export class CatalogueCache {
  private readonly entries: LRUCache<string, Entry> | undefined
  /** Answers being computed, so a burst of identical misses runs the queries once. */
  private readonly computing = new Map<string, { snapshot: CatalogueSnapshot; answer: Promise<CatalogueAnswer | undefined> }>()

  /** `maxBytes` 0 keeps nothing: every answer is computed. */
  constructor(maxBytes: number) {
    this.entries =
      maxBytes > 0 ? new LRUCache<string, Entry>({ maxSize: maxBytes, sizeCalculation: (entry, key) => entry.body.length + key.length + 200 }) : undefined
  }

  /**
   * The answer for `key` as of `snapshot`: kept, or made by `produce` (undefined: nothing to
   * answer, e.g. not found; not kept). Only a computation started under the same snapshot is
   * shared: one started under an earlier one may miss a change this request must see.
   */
  async answer(key: string, snapshot: CatalogueSnapshot, produce: () => Promise<Produced | undefined>): Promise<CatalogueAnswer | undefined> {
    const kept = this.entries?.get(key)
    if (kept && kept.version === snapshot.versionOf(kept.cityId)) return kept

    const running = this.computing.get(key)
    if (running?.snapshot === snapshot) return running.answer

    const answer = produce().then((produced) => {
      if (produced === undefined) return undefined
      const entry: Entry = {
        body: produced.body,
        etag: `"${createHash('sha1').update(produced.body).digest('base64')}"`,
        cityId: produced.cityId,
        version: snapshot.versionOf(produced.cityId),
      }
      this.entries?.set(key, entry)
      return entry
    })
    this.computing.set(key, { snapshot, answer })
    try {
      return await answer
    } finally {
      if (this.computing.get(key)?.answer === answer) this.computing.delete(key)
    }
  }
}
