import { inArray } from 'drizzle-orm'
import type { PipelinedDatabase } from '../../db/client.js'
import { cities, districts, residentialComplexes } from '../../db/schema.js'
import { seedDealTypes, seedPropertyStatuses, seedPropertyTypes } from '../../db/seed/dictionaries.js'

export interface Place {
  name: string
  cityId: number
  /** A residential complex's district, where it has one. */
  districtId?: number | null
}

/**
 * Names of reference data in memory, so a catalogue page or a submission names its types and
 * places without a join or a query per row. Names never change once created; a place added
 * after start (by an admin, possibly in another process) is simply loaded the first time it is
 * asked for, so every process stays exact without any invalidation. One per process, built
 * with its services.
 */
export class ReferenceNames {
  readonly propertyTypes = new Map<number, string>(seedPropertyTypes.map((type) => [type.id, type.name]))
  readonly dealTypes = new Map<number, string>(seedDealTypes.map((type) => [type.id, type.name]))
  readonly statuses = new Map<number, string>(seedPropertyStatuses.map((status) => [status.id, status.name]))
  private readonly cities = new Map<number, Place>()
  private readonly districts = new Map<number, Place>()
  private readonly complexes = new Map<number, Place>()

  constructor(private readonly db: PipelinedDatabase) {}

  /**
   * Loads whatever of these ids is not known yet (one query per kind, only on a miss). Inside a
   * transaction pass it as `via`: PGlite has one connection, which the transaction holds.
   */
  async ensure(
    ids: { cityIds?: Iterable<number | null>; districtIds?: Iterable<number | null>; complexIds?: Iterable<number | null> },
    via: PipelinedDatabase = this.db,
  ): Promise<void> {
    // Called for every catalogue page, whose places are almost always known: no allocation then.
    const missing = (known: Map<number, Place>, wanted: Iterable<number | null> = []) => {
      let unknown: Set<number> | undefined
      for (const id of wanted) if (id !== null && !known.has(id)) (unknown ??= new Set()).add(id)
      return unknown ? [...unknown] : []
    }
    const cityIds = missing(this.cities, ids.cityIds)
    const districtIds = missing(this.districts, ids.districtIds)
    const complexIds = missing(this.complexes, ids.complexIds)
    if (cityIds.length + districtIds.length + complexIds.length === 0) return
    await Promise.all([
      cityIds.length > 0 &&
        via
          .select({ id: cities.id, name: cities.name })
          .from(cities)
          .where(inArray(cities.id, cityIds))
          .then((rows) => rows.forEach((row) => this.cities.set(row.id, { name: row.name, cityId: row.id }))),
      districtIds.length > 0 &&
        via
          .select({ id: districts.id, name: districts.name, cityId: districts.cityId })
          .from(districts)
          .where(inArray(districts.id, districtIds))
          .then((rows) => rows.forEach((row) => this.districts.set(row.id, row))),
      complexIds.length > 0 &&
        via
          .select({
            id: residentialComplexes.id,
            name: residentialComplexes.name,
            cityId: residentialComplexes.cityId,
            districtId: residentialComplexes.districtId,
          })
          .from(residentialComplexes)
          .where(inArray(residentialComplexes.id, complexIds))
          .then((rows) => rows.forEach((row) => this.complexes.set(row.id, row))),
    ])
  }

  /** `{id, name}` of a loaded place, or null for no place. */
  ref(kind: 'city' | 'district' | 'complex', id: number | null): { id: number; name: string } | null {
    if (id === null) return null
    const place = this[kind](id)
    if (!place) throw new Error(`${kind} ${id} is not loaded; call ensure() first`)
    return { id, name: place.name }
  }

  city(id: number): Place | undefined {
    return this.cities.get(id)
  }

  district(id: number): Place | undefined {
    return this.districts.get(id)
  }

  complex(id: number): Place | undefined {
    return this.complexes.get(id)
  }
}
