/**
 * Page cursors: `next_cursor` of a paged list, handed back as `cursor=` for the page after it.
 * A cursor is opaque to clients: base64url of a small JSON `{s, f, k}`, where `s` is the sort
 * it was made for, `f` a digest of the search's filters, and `k` the sort key of the last item
 * of its page, as an array (a sort names its own key: `[created_at, id]`, `[price, id]`…, so a
 * new sort only adds its key's shape). A page by cursor is then a keyset read, `key > k` in the
 * sort's order, which costs the same at any depth and is not moved by listings added meanwhile.
 *
 * A cursor is a position, not a credential: it is not signed, and anything it holds could be
 * asked for anyway. It is bound to its sort and filters so that a cursor used with another
 * search is refused (422) rather than quietly starting somewhere meaningless.
 */
import { createHash } from 'node:crypto'
import { ApiError } from './errors.js'

/** A sort key as a cursor carries it: JSON scalars, in the sort's order. */
export type CursorKey = readonly (string | number | null)[]

/** What a cursor belongs to: the sort and the filters of its search (any JSON value, compared by digest). */
export interface CursorBinding {
  sort: string
  filters: unknown
}

const digestOf = (filters: unknown) => createHash('sha256').update(JSON.stringify(filters)).digest('base64url').slice(0, 12)

export function encodeCursor(binding: CursorBinding, key: CursorKey): string {
  return Buffer.from(JSON.stringify({ s: binding.sort, f: digestOf(binding.filters), k: key })).toString('base64url')
}

const invalidCursor = (msg: string) => ApiError.validation([{ loc: ['query', 'cursor'], msg }])

/**
 * The key a cursor holds, checked against the search it is used with: 422 naming `cursor` for
 * anything that is not one of ours, or is another search's. `readKey` reads the key for the
 * sort, undefined when its shape or a value is wrong (which is then a 422 too).
 */
export function decodeCursor<K>(cursor: string, binding: CursorBinding, readKey: (key: unknown[]) => K | undefined): K {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    throw invalidCursor('is not a cursor this list gave out')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalidCursor('is not a cursor this list gave out')
  const { s, f, k } = parsed as { s?: unknown; f?: unknown; k?: unknown }
  if (typeof s !== 'string' || typeof f !== 'string' || !Array.isArray(k)) throw invalidCursor('is not a cursor this list gave out')
  if (s !== binding.sort) throw invalidCursor(`was given for sort ${JSON.stringify(s).slice(0, 40)}, not ${binding.sort}; start again without it`)
  if (f !== digestOf(binding.filters)) throw invalidCursor('was given for other filters; start again without it')
  const key = readKey(k)
  if (key === undefined) throw invalidCursor('is not a cursor this list gave out')
  return key
}

/** A cursor is the position after an item: it skips nothing more, so a non-zero offset with it is refused. */
export function refuseOffsetWithCursor(cursor: string | undefined, offset: number): void {
  if (cursor !== undefined && offset !== 0) throw invalidCursor('cannot be combined with a non-zero offset: a cursor already says where the page starts')
}

const TIMESTAMP_KEY = /^(\d{4})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/

/**
 * A time as a key holds it: UTC to the microsecond (as PostgreSQL keeps it; the API's
 * milliseconds would lose ties), e.g. `2026-11-22T09:15:02.123456Z`. Undefined for anything
 * PostgreSQL would not read as a valid timestamp.
 */
export function timestampKey(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  const match = TIMESTAMP_KEY.exec(value)
  if (!match || match[1] === '0000') return undefined
  const time = new Date(value)
  // A valid date (not 2026-02-30, not hour 25) reads back as itself.
  if (Number.isNaN(time.getTime()) || time.toISOString().slice(0, 19) !== value.slice(0, 19)) return undefined
  return value
}

/**
 * A time as PostgreSQL writes a `timestamp` in UTC (JSON `2026-11-22T09:15:02.123456`, text
 * `2026-11-22 09:15:02.123456`) as a key.
 */
export const timestampKeyFromUtc = (utc: string) => `${utc.replace(' ', 'T')}Z`

/** An id as a key holds it. */
export const idKey = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 2_147_483_647 ? value : undefined
