import { sql } from 'drizzle-orm'
import { isDatabaseUnavailable, type DatabaseAvailability } from '../../db/availability.js'
import type { PipelinedDatabase } from '../../db/client.js'
import { countPendingMigrations } from '../../db/migrate.js'

export type Readiness = { ready: true } | { ready: false; detail: string }

/** What orchestrators ask of a process: is its database reachable and fully migrated. */
export class OperationsService {
  /**
   * `db`: the catalogue's pipelined connections, which no transaction holds: on the pool, a
   * probe waited for a connection behind the process's slow work, and a pool busy for 2 s
   * (load, not an outage) read as a database gone.
   */
  constructor(
    private readonly db: PipelinedDatabase,
    private readonly availability: DatabaseAvailability,
  ) {}

  async readiness(): Promise<Readiness> {
    let pending: number
    try {
      await this.db.execute(sql`select 1`)
      pending = await countPendingMigrations(this.db)
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error
      // Logged once for the whole outage by `availability`, not once per probe.
      this.availability.failed(error)
      return { ready: false, detail: 'The database is unreachable.' }
    }
    return pending > 0 ? { ready: false, detail: `${pending} migration(s) not applied yet.` } : { ready: true }
  }
}
