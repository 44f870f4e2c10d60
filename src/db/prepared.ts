import { createHash } from 'node:crypto'
import type { PipelinedDatabase } from './client.js'

/** What Drizzle's `.prepare(name)` gives: a statement run with values for its placeholders. */
export interface PreparedStatement<T> {
  execute(values?: Record<string, unknown>): Promise<T>
}

const statementsByDatabase = new WeakMap<PipelinedDatabase, Map<string, PreparedStatement<unknown>>>()

/**
 * A prepared statement for one shape of query, built once per database (so a request spends
 * nothing on query building) and named, so PostgreSQL parses it once per connection and may
 * keep its plan. `shape` must name everything that changes the SQL text.
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
    // Statement names are cut at 63 bytes by PostgreSQL: a digest keeps them unique.
    statement = build(`mls_${createHash('sha1').update(shape).digest('hex').slice(0, 20)}`)
    statements.set(shape, statement)
  }
  return statement as PreparedStatement<T>
}
