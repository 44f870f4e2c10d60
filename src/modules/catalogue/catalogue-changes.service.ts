import type { Database, PipelinedDatabase } from '../../db/client.js'
import { ApiError } from '../../lib/errors.js'
import type { ReferenceNames } from '../reference/reference-names.js'
import * as repository from './catalogue-changes.repository.js'
import type { ChangesPage } from './catalogue-changes.schemas.js'
import { placesOf, toCatalogueDetail } from './catalogue.mapper.js'

/**
 * Where a reader is: the position of the last change it read, and the retention horizon it
 * started under (see read). Opaque to clients, so its form may change.
 */
interface Cursor {
  position: number
  horizon: number
}

const encodeCursor = ({ position, horizon }: Cursor) => Buffer.from(`c${position}.${horizon}`).toString('base64url')

const notOurs = () => ApiError.validation([{ loc: ['query', 'after'], msg: 'is not a cursor this service gave' }])

function decodeCursor(cursor: string): Cursor {
  const parts = /^c(\d{1,15})\.(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString())
  const cursorOf = parts && { position: Number(parts[1]), horizon: Number(parts[2]) }
  // Base64 decoding forgives: a cursor cut short by a character still reads, as another one
  // (`c2.12` cut becomes `c2.1`), which would answer 410 and send a mirror back to a full copy.
  if (!cursorOf || encodeCursor(cursorOf) !== cursor) throw notOurs()
  return cursorOf
}

/**
 * The change feed (GET /mls/changes): every change of what the catalogue shows, in the order
 * the changes committed, for mirrors of the catalogue. Public like the catalogue, and as
 * the catalogue, without owner data. See docs/api.md#change-feed.
 */
export class CatalogueChangesService {
  constructor(
    private readonly db: PipelinedDatabase,
    private readonly names: ReferenceNames,
    private readonly mediaBase: string,
    /** Where retention writes: the pool, as feed reads may be pipelined. */
    private readonly writer: Database,
  ) {}

  /** Changes after `after` (from the start of the kept history without one), oldest first. */
  async read(after: string | undefined, limit: number): Promise<ChangesPage> {
    const cursor = after === undefined ? undefined : decodeCursor(after)
    const from = cursor?.position ?? 0
    // One more than asked for, to tell whether more follow.
    const { changes, prunedThrough, lastPosition, endPosition } = await repository.readChanges(this.db, from, limit + 1)
    // Positions only grow: a cursor past the last one given was not given by this feed (read
    // from it, a reader would skip what comes next, or dodge the 410 below).
    if (cursor && (cursor.position > lastPosition || cursor.horizon > lastPosition)) throw notOurs()
    // Retention has pruned removals up to position `prunedThrough`. Each listing has one row,
    // and a change moves it to a new position, past every one before: so a removal at or before
    // the feed's end when a reader started is of a listing the reader never saw, whether it was
    // pruned before the reader started or while it reads. Only a removal after that end (its
    // horizon), which it has not read past, may be one it needed. Positions become visible in
    // order (architecture.md#the-change-feed), so the end it saw has nothing before it to come.
    const horizon = cursor?.horizon ?? Math.max(prunedThrough, endPosition)
    if (prunedThrough > Math.max(from, horizon)) {
      throw ApiError.gone(
        'This cursor is older than the kept history of changes (CHANGE_RETENTION_DAYS): some removals after it are gone. Copy the catalogue again from the start of the feed (no `after`) and go on from there.',
      )
    }
    const page = changes.slice(0, limit)
    await this.names.ensure(placesOf(page.flatMap((change) => (change.listing ? [change.listing] : []))))
    return {
      items: page.map((change) => ({
        cursor: encodeCursor({ position: change.position, horizon }),
        op: change.op,
        id: change.listingId,
        changed_at: change.changedAt,
        property:
          change.op === 'upsert' && change.listing
            ? toCatalogueDetail(change.listing, this.names, this.mediaBase)
            : { id: change.listingId, reason: change.reason ?? 'withdrawn' },
      })),
      next_cursor: encodeCursor({ position: page.at(-1)?.position ?? from, horizon }),
      has_more: changes.length > limit,
    }
  }

  /** A cursor at the feed's end now: for a mirror that copies the catalogue first, taken before it starts. */
  async snapshot(): Promise<{ cursor: string }> {
    return { cursor: encodeCursor(await repository.latestPosition(this.db)) }
  }

  /** Retention: forgets up to `limit` removals older than `days`; how many. */
  forgetRemovals(days: number, limit: number): Promise<number> {
    return repository.pruneRemovals(this.writer, days, limit)
  }
}
