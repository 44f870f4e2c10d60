import { LRUCache } from 'lru-cache'
import type { CatalogueSnapshot } from './catalogue-versions.js'

/** What a computation gives the cache to keep. */
export interface Kept<T> {
  value: T
  /** About what keeping it costs, for the cache's budget. */
  bytes: number
  /** The city whose counter the value depends on; undefined for every city. */
  cityId: number | undefined
}

interface Entry {
  value: unknown
  bytes: number
  cityId: number | undefined
  /** That city's counter when the value's queries started. */
  version: number
}

/** The key and bookkeeping of an entry, over its value's own bytes. */
const ENTRY_OVERHEAD_BYTES = 200

/**
 * Catalogue values (serialised answers, totals) kept in this process for as long as the
 * catalogue counters they depend on stay where they were (catalogue-versions.ts), so a value is
 * never older than the last change committed before the request came. Bounded in bytes, least
 * recently used first out. Every API process keeps its own: nothing to share, nothing to
 * invalidate across processes.
 *
 * One key holds one kind of value: callers name keys by kind (`list:`, `total:`, `detail:`).
 */
export class CatalogueCache {
  private readonly entries: LRUCache<string, Entry> | undefined
  /** Values being computed, so a burst of identical misses runs the queries once. */
  private readonly computing = new Map<string, { snapshot: CatalogueSnapshot; value: Promise<unknown> }>()

  /** `maxBytes` 0 keeps nothing: every value is computed. */
  constructor(maxBytes: number) {
    this.entries =
      maxBytes > 0
        ? new LRUCache<string, Entry>({ maxSize: maxBytes, sizeCalculation: (entry, key) => entry.bytes + key.length + ENTRY_OVERHEAD_BYTES })
        : undefined
  }

  /**
   * The value for `key` as of `snapshot`: kept, or made by `produce` (undefined: nothing to
   * answer, e.g. not found; not kept). Only a computation started under the same snapshot is
   * shared: one started under an earlier one may miss a change this request must see.
   */
  get<T>(key: string, snapshot: CatalogueSnapshot, produce: () => Promise<Kept<T>>): Promise<T>
  get<T>(key: string, snapshot: CatalogueSnapshot, produce: () => Promise<Kept<T> | undefined>): Promise<T | undefined>
  async get<T>(key: string, snapshot: CatalogueSnapshot, produce: () => Promise<Kept<T> | undefined>): Promise<T | undefined> {
    const kept = this.entries?.get(key)
    if (kept && kept.version === snapshot.versionOf(kept.cityId)) return kept.value as T

    const running = this.computing.get(key)
    if (running?.snapshot === snapshot) return running.value as Promise<T | undefined>

    const value = produce().then((produced) => {
      if (produced === undefined) return undefined
      this.entries?.set(key, { ...produced, version: snapshot.versionOf(produced.cityId) })
      return produced.value
    })
    this.computing.set(key, { snapshot, value })
    try {
      return await value
    } finally {
      if (this.computing.get(key)?.value === value) this.computing.delete(key)
    }
  }
}
