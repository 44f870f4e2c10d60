import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Database, DatabaseHandle } from '../db/client.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The query interface; every module reads and writes through it. */
    db: Database
    /** The connection behind `db`, for health checks. Opened and closed by the process, not the app. */
    database: DatabaseHandle
  }
}

export default fp(
  async function databasePlugin(app: FastifyInstance, options: { database: DatabaseHandle }) {
    app.decorate('database', options.database)
    app.decorate('db', options.database.db)
  },
  { name: 'database' },
)
