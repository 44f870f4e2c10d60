/**
 * The catalogue's cursors (src/lib/cursor.ts): each sort's key, and the keyset reads a page
 * after a key is made of. Pure, so the SQL in catalogue.repository.ts stays a set of fixed
 * statements.
 *
 * Where listings without a price go: after every price for price_asc, before every price for
 * price_desc, each among themselves by id in the sort's direction. That is PostgreSQL's own
 * order (NULLS LAST ascending, NULLS FIRST descending), the one the price indexes (price, id)
 * hold, so the offset pages and the cursor pages agree. A price order is therefore two parts,
 * the priced listings and the unpriced ones, each a keyset range of its own on the same index:
 * a row comparison `(price, id) > (p, i)` never matches a null price, and `price is null and
 * id > i` only those. A page that ends one part goes on at the start of the other.
 */
import { decodeCursor, encodeCursor, idKey, timestampKey, type CursorBinding, type CursorKey } from '../../lib/cursor.js'
import type { CatalogueFilter, CatalogueSort } from './catalogue-page-plan.js'

/** A run of one sort's order that a page after a key reads, as one keyset range. */
export type Keyset =
  | { part: 'created'; createdAt: string; id: number }
  | { part: 'priced'; price: number; id: number }
  | { part: 'unpriced'; id: number }
  | { part: 'distance'; latitude: number; longitude: number; id: number }

/** What a listing's place in each sort is read from. */
export interface SortedRow {
  id: number
  price: number | null
  /** UTC to the microsecond, as a timestamp key (cursor.ts). */
  createdAtKey: string
  /** Read where the map is searched; a distance order's key is its last listing's place. */
  latitude: number | null
  longitude: number | null
}

/** Past any price numeric(15,2) holds: the start of the priced part of price_desc. */
const ABOVE_ANY_PRICE = 1e15

/** Each sort's key: what its cursor holds, read from a row and checked when it comes back. */
const sortKeys: Record<CatalogueSort, { of: (row: SortedRow) => CursorKey; read: (key: unknown[]) => Keyset | undefined }> = {
  created_desc: {
    of: (row) => [row.createdAtKey, row.id],
    read: ([createdAt, id, ...rest]) => {
      const time = timestampKey(createdAt)
      const after = idKey(id)
      return time !== undefined && after !== undefined && rest.length === 0 ? { part: 'created', createdAt: time, id: after } : undefined
    },
  },
  price_asc: { of: (row) => [row.price, row.id], read: (key) => readPriceKey(key) },
  price_desc: { of: (row) => [row.price, row.id], read: (key) => readPriceKey(key) },
  // Where the last listing is, not its distance: the database computes both distances by one
  // expression, so the comparison is exact (catalogue.repository.ts).
  distance: {
    of: (row) => [row.latitude, row.longitude, row.id],
    read: ([latitude, longitude, id, ...rest]) => {
      const after = idKey(id)
      const isCoordinate = (value: unknown, limit: number): value is number => typeof value === 'number' && Math.abs(value) <= limit
      return after !== undefined && rest.length === 0 && isCoordinate(latitude, 90) && isCoordinate(longitude, 180)
        ? { part: 'distance', latitude, longitude, id: after }
        : undefined
    },
  },
}

function readPriceKey([price, id, ...rest]: unknown[]): Keyset | undefined {
  const after = idKey(id)
  if (after === undefined || rest.length > 0) return undefined
  if (price === null) return { part: 'unpriced', id: after }
  return typeof price === 'number' && Number.isFinite(price) && price >= 0 && price < ABOVE_ANY_PRICE ? { part: 'priced', price, id: after } : undefined
}

/** What a catalogue cursor is bound to: the sort and every filter's value. */
export const bindingOf = (sort: CatalogueSort, filter: CatalogueFilter): CursorBinding => ({ sort, filters: Object.values(filter) })

export const cursorAfter = (sort: CatalogueSort, filter: CatalogueFilter, row: SortedRow) => encodeCursor(bindingOf(sort, filter), sortKeys[sort].of(row))

/** The position a cursor holds, or a 422 naming `cursor`. */
export const positionOf = (cursor: string, sort: CatalogueSort, filter: CatalogueFilter): Keyset =>
  decodeCursor(cursor, bindingOf(sort, filter), sortKeys[sort].read)

/**
 * The keyset reads of the page after `position`, in turn, until the page is full: the rest of
 * its part, then the other part of a price order from its start. A price range keeps no
 * listing without a price, so it has no unpriced part.
 */
export function keysetsAfter(sort: CatalogueSort, filter: CatalogueFilter, position: Keyset): Keyset[] {
  const unpricedToo = filter.minPrice === undefined && filter.maxPrice === undefined
  if (sort === 'price_asc' && position.part === 'priced') return unpricedToo ? [position, { part: 'unpriced', id: 0 }] : [position]
  if (sort === 'price_desc' && position.part === 'unpriced' && unpricedToo) return [position, { part: 'priced', price: ABOVE_ANY_PRICE, id: 0 }]
  return [position]
}
