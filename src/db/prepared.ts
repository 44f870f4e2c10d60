import { createHash } from 'node:crypto'
import type { PipelinedDatabase } from './client.js'

/** What Drizzle's `.prepare(name)` gives: a statement run with values for its placeholders. */
export interface PreparedStatement<T> {
  execute(values?: Record<string, unknown>): Promise<T>
}

const statementsByDatabase = new WeakMap<PipelinedDatabase, Map<string, PreparedStatement<unknown>>>()

/**
 * How many shapes a database names. PostgreSQL keeps a named statement, with its plan, on each
 * connection that ran it for as long as the connection lives, and the catalogue's shapes are
 * the combinations of the filters a request sends: a client that varies them could make tens
 * of thousands, each kept on every connection. Past this many, a shape runs unnamed: built and
 * parsed for each request, and kept nowhere. The bench's searches, maps and clusters send 128
 * combinations of filters and sort (counted over 200,000 drawn), each a few shapes (its page
 * plans, its count): well within the bound.
 */
export const MAX_NAMED_SHAPES = 1000

/**
 * A prepared statement for one shape of query, built once per database (so a request spends
 * nothing on query building) and named, so PostgreSQL parses it once per connection and may
 * keep its plan. `shape` must name everything that changes the SQL text. Past MAX_NAMED_SHAPES
 * shapes, a new one is built unnamed each time.
 *
 * Built on a transaction, a statement is kept with that transaction and goes with it; the name
 * still spares the connection a parse when it already knows the statement.
 */
export function prepared<T>(db: PipelinedDatabase, shape: string, build: (name: string) => PreparedStatement<T>): PreparedStatement<T> {
  let statements = statementsByDatabase.get(db)
  if (!statements) {
    statements = new Map()
    statementsByDatabase.set(db, statements)
  }
  let statement = statements.get(shape)
  if (!statement) {
    if (statements.size >= MAX_NAMED_SHAPES) return build('')
    // Statement names are cut at 63 bytes by PostgreSQL: a digest keeps them unique.
    statement = build(`mls_${createHash('sha1').update(shape).digest('hex').slice(0, 20)}`)
    statements.set(shape, statement)
  }
  return statement as PreparedStatement<T>
}
