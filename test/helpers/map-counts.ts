import assert from 'node:assert/strict'
import { sql, type Name } from 'drizzle-orm'
import { queryRows, type Database } from '../../src/db/client.js'

/** The map's counts tables (migrations 0026 and 0028): each with its key's order and the function that rebuilds it from the listings. */
const mapCountsTables = [
  { table: 'catalogue_counts_by_cell', key: 'cell_row, cell_column, property_type_id, deal_type_id, rooms', rebuild: 'catalogue_cells_rebuild' },
  {
    table: 'catalogue_counts_by_cell_price',
    key: 'property_type_id, deal_type_id, cell_row, cell_column, price_band',
    rebuild: 'catalogue_cell_prices_rebuild',
  },
]

/**
 * The map's counts tables as their triggers left them are what their rebuilds make of the
 * listings, row for row; each holds at least `minimumRows` rows.
 */
export async function assertMapCountsAsRebuilt(db: Database, minimumRows = 1): Promise<void> {
  for (const { table, key, rebuild } of mapCountsTables) {
    const contents = async () => (await queryRows(db, sql`select * from ${sql.identifier(table)} order by ${sql.raw(key)}`)).map((row) => JSON.stringify(row))
    const kept = await contents()
    assert.ok(kept.length >= minimumRows, `${table} holds ${kept.length} rows`)
    await db.execute(sql`select ${sql.raw(rebuild)}()`)
    assert.deepEqual(await contents(), kept, `${table} as its rebuild makes it`)
  }
}

/**
 * The columns of a listing that a copy of a template listing takes from it, as identifiers:
 * all but those the database fills itself and those the copy `provides` (its own values).
 */
export async function templateColumns(db: Database, provides: readonly [string, ...string[]]): Promise<Name[]> {
  const rows = await queryRows<{ name: string }>(
    db,
    sql`select column_name as name from information_schema.columns
        where table_schema = current_schema() and table_name = 'properties' and is_generated = 'NEVER' and is_identity = 'NO'
          and column_name not in (${sql.join(
            provides.map((name) => sql`${name}`),
            sql`, `,
          )})`,
  )
  return rows.map((column) => sql.identifier(column.name))
}
