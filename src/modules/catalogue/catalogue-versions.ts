import type { PipelinedDatabase } from '../../db/client.js'
import { catalogueVersions } from '../../db/schema.js'

/** The catalogue's counters as one read saw them (see catalogueVersions in schema.ts). */
export class CatalogueSnapshot {
  private readonly all: number

  constructor(private readonly byCity: ReadonlyMap<number, number>) {
    // Counters only ever grow, so their sum moves whenever any of them does.
    let all = 0
    for (const version of byCity.values()) all += version
    this.all = all
  }

  /**
   * The counter an answer about `cityId` depends on; without a city (a search over every
   * city), the sum of them all. A city never changed yet is at 0.
   */
  versionOf(cityId: number | undefined): number {
    return cityId === undefined ? this.all : (this.byCity.get(cityId) ?? 0)
  }
}

/**
 * Reads the catalogue's counters for requests, many requests to one read. A request must see
 * every change committed before it arrived, so it cannot use a read that was already under
 * way: it waits for the next one, which starts when the current one ends and serves everyone
 * who arrived meanwhile. However many requests come in, at most one read is in flight, and a
 * request waits at most two of them (a fraction of a millisecond each on PostgreSQL).
 */
export class CatalogueVersions {
  private running: Promise<CatalogueSnapshot> | undefined
  private next: Promise<CatalogueSnapshot> | undefined

  constructor(private readonly db: PipelinedDatabase) {}

  current(): Promise<CatalogueSnapshot> {
    if (this.running === undefined) return this.start()
    this.next ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.next = undefined
        return this.start()
      })
    return this.next
  }

  private start(): Promise<CatalogueSnapshot> {
    const read = this.read().finally(() => {
      if (this.running === read) this.running = undefined
    })
    this.running = read
    return read
  }

  private async read(): Promise<CatalogueSnapshot> {
    const rows = await this.db.select().from(catalogueVersions)
    return new CatalogueSnapshot(new Map(rows.map((row) => [row.cityId, row.version])))
  }
}
