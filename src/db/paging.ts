import { count, type SQL } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import type { PipelinedDatabase } from './client.js'

/**
 * One page of a list and the number of rows matching it, read at once: what every
 * `{items, total, limit, offset}` answer is made from. `rows` is the page's query (ordered,
 * limited); the total counts `table` under the same `where`.
 */
export async function rowsWithTotal<T>(
  db: PipelinedDatabase,
  rows: PromiseLike<T[]>,
  table: PgTable,
  where: SQL | undefined,
): Promise<{ rows: T[]; total: number }> {
  const [page, [counted]] = await Promise.all([rows, db.select({ total: count() }).from(table).where(where)])
  return { rows: page, total: counted?.total ?? 0 }
}
