/**
 * Finding files in storage that no photo row names, and rows whose files are gone: the
 * storage's listing and the rows' keys are walked side by side, both in ascending byte order,
 * as a merge join does, so memory holds a page of each whatever the number of photos.
 */
import { compareKeys, type StoredFile } from './storage.js'

/** A storage key a photo row names: its photo's or its thumbnail's. */
export interface NamedKey {
  key: string
  imageId: number
  createdAt: Date
}

/** What the walk found up to the end of one page of the listing (or after the last one). */
export interface KeyComparison {
  /** Files listed in this page. */
  listed: number
  /** Files no row names. */
  unnamed: StoredFile[]
  /** Keys rows name that the listing passed without finding. */
  missing: NamedKey[]
}

/** Row keys reported per comparison after the listing has ended. */
const TRAILING_PAGE = 1000

/**
 * Compares the listing with the rows' keys. Throws if the listing is not in ascending byte
 * order, since a file would then look unnamed while a row names it.
 */
export async function* compareStorageWithRows(files: AsyncIterable<StoredFile[]>, named: AsyncIterable<NamedKey[]>): AsyncGenerator<KeyComparison> {
  const rows = new Cursor(named[Symbol.asyncIterator]())
  let previous: string | undefined
  for await (const page of files) {
    const comparison: KeyComparison = { listed: page.length, unnamed: [], missing: [] }
    for (const file of page) {
      if (previous !== undefined && compareKeys(previous, file.key) >= 0) {
        throw new Error(`The storage listed ${JSON.stringify(file.key)} after ${JSON.stringify(previous)}, out of byte order`)
      }
      previous = file.key
      let row = await rows.peek()
      while (row !== undefined && compareKeys(row.key, file.key) < 0) {
        comparison.missing.push(row)
        rows.advance()
        row = await rows.peek()
      }
      if (row !== undefined && row.key === file.key) rows.advance()
      else comparison.unnamed.push(file)
    }
    yield comparison
  }
  let missing: NamedKey[] = []
  for (let row = await rows.peek(); row !== undefined; row = await rows.peek()) {
    missing.push(row)
    rows.advance()
    if (missing.length >= TRAILING_PAGE) {
      yield { listed: 0, unnamed: [], missing }
      missing = []
    }
  }
  if (missing.length > 0) yield { listed: 0, unnamed: [], missing }
}

/** One item at a time from a source of pages, fetching the next page when needed. */
class Cursor<T> {
  private page: T[] = []
  private index = 0
  private ended = false

  constructor(private readonly pages: AsyncIterator<T[]>) {}

  async peek(): Promise<T | undefined> {
    while (this.index >= this.page.length) {
      if (this.ended) return undefined
      const next = await this.pages.next()
      if (next.done === true) {
        this.ended = true
        return undefined
      }
      this.page = next.value
      this.index = 0
    }
    return this.page[this.index]
  }

  advance(): void {
    this.index++
  }
}
