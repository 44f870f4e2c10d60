import { sql } from 'drizzle-orm'
import type { Database } from '../../db/client.js'
import { countPendingMigrations } from '../../db/migrate.js'

export type Readiness = { ready: true } | { ready: false; detail: string }

/** What orchestrators ask of a process: is its database reachable and fully migrated. */
export class OperationsService {
  constructor(private readonly db: Database) {}

  async readiness(): Promise<Readiness> {
    await this.db.execute(sql`select 1`)
    const pending = await countPendingMigrations(this.db)
    return pending > 0 ? { ready: false, detail: `${pending} migration(s) not applied yet.` } : { ready: true }
  }
}
