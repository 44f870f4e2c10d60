import { PGlite } from '@electric-sql/pglite'
import type { SQL } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { drizzle as drizzlePostgres } from 'drizzle-orm/node-postgres'
import pg from 'pg'
import { DatabaseAvailability, isDatabaseUnavailable } from './availability.js'
import { lockDataDir } from './data-dir-lock.js'
import { listenForNotifications, type NotificationHandlers, type NotificationListener } from './notifications.js'
import { PipelinedConnections } from './pipelines.js'
import * as schema from './schema.js'

export type Schema = typeof schema
/** The one query interface the code uses, whichever engine is underneath. */
export type Database = PgDatabase<PgQueryResultHKT, Schema>
/**
 * The query interface without transactions (see DatabaseHandle.pipelined); also the type code
 * that runs only standalone statements takes, so that either interface serves it.
 */
export type PipelinedDatabase = Omit<Database, 'transaction'>

/**
 * Runs raw SQL and returns its rows. Both drivers answer `{ rows }`; the shared type cannot
 * say so, hence this one typed door for the few queries Drizzle's builder does not express.
 */
export async function queryRows<T>(db: PipelinedDatabase, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as { rows: T[] }
  return result.rows
}

export type DatabaseKind = 'pglite' | 'postgres'

export interface DatabaseHandle {
  db: Database
  /**
   * The same database for statements that stand alone, outside any transaction (the public
   * catalogue's reads): on PostgreSQL they are pipelined on connections of their own (see
   * PipelinedConnections), on PGlite this is `db`.
   */
  pipelined: PipelinedDatabase
  kind: DatabaseKind
  /**
   * Runs `work` on one dedicated connection, for what must stay on a single session
   * (session-level advisory locks). PGlite has only one connection, so it is that one.
   */
  withSession<T>(work: (db: Database) => Promise<T>): Promise<T>
  /** Whether the server is reachable, as the connections last saw it; logs an outage once. */
  availability: DatabaseAvailability
  /**
   * Hears the NOTIFYs other processes send on `channel` (see notifications.ts), on a connection
   * of its own that reconnects by itself. PGlite serves one process, which has nobody to hear
   * from: there it only says it is listening.
   */
  listen(channel: string, handlers: NotificationHandlers): Promise<NotificationListener>
  close(): Promise<void>
}

export interface DatabaseOptions {
  /** `postgres://…`; undefined opens PGlite. */
  databaseUrl: string | undefined
  /** Where PGlite keeps its files; undefined keeps PGlite in memory (tests). */
  pgliteDir: string | undefined
  /**
   * For an in-memory PGlite: a data directory dumped by PGlite's `dumpDataDir` to start from,
   * instead of an empty one. Tests start each database as a copy of one migrated once, which
   * saves a second engine instance, initdb and the migrations: seconds of CPU each.
   */
  pgliteDataDirDump?: Blob
  /**
   * Open for a few statements and closed (a command of the CLIs): PGlite then gets a small
   * buffer pool instead of its default 128 MB, which costs it half a second to set up. An
   * in-memory PGlite (a test's) always does: its files are in memory already.
   */
  brief?: boolean
  poolSize?: number
  /** Connections of `pipelined` on PostgreSQL. */
  pipelinedConnections?: number
  /** The server's limit on a catalogue statement on PostgreSQL (see UNANSWERED_STATEMENT_GRACE_MS); 30 s if not given. */
  statementTimeoutMs?: number
}

/**
 * The longest a statement waits for a new connection: a server that is down answers at once
 * (connection refused), one that cannot be reached is given this long, then the request is a 503.
 */
export const CONNECT_TIMEOUT_MS = 2000

/**
 * The longest a session may sit inside a transaction with no statement running before the
 * server ends it, rolling the transaction back. The service's transactions wait on nothing but
 * their own statements, so one idle this long belongs to a process that froze (a pause, a
 * stalled host, a network cut the server has not noticed): its row locks would otherwise stop
 * every other process that writes those rows for as long as the stall lasts; a publication,
 * for one, updates its city's catalogue counts, so one frozen worker held up every check.
 */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 5000

/**
 * How much longer than the server's limit on a catalogue statement (`statementTimeoutMs`, 30 s
 * by default) any statement may go unanswered before its connection is taken for dead and
 * ended: a server that froze, a stalled host, or a network that drops packets without a word,
 * which TCP itself notices only after many minutes. A statement the server cut has been
 * answered (with its error) by then; the service's other statements take milliseconds to
 * seconds. Sessions (migrations, which may run long and wait on one another's lock) have no
 * such limit.
 */
export const UNANSWERED_STATEMENT_GRACE_MS = 5000

export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl, options.poolSize ?? 10, options.pipelinedConnections ?? 2, options.statementTimeoutMs ?? 30_000)
    : openPglite(options.pgliteDir, options.pgliteDataDirDump, options.brief === true || options.pgliteDir === undefined)
}

async function openPostgres(connectionString: string, max: number, pipelinedConnections: number, statementTimeoutMs: number): Promise<DatabaseHandle> {
  const unansweredMs = statementTimeoutMs + UNANSWERED_STATEMENT_GRACE_MS
  const server = {
    connectionString,
    application_name: 'open-mls',
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
  }
  const pool = new pg.Pool({ ...server, max, query_timeout: unansweredMs, Client: ClientEndedWhenUnanswered })
  const availability = new DatabaseAvailability(() => pool.query('select 1'))
  const connectionLost = (error: Error) => {
    if (isDatabaseUnavailable(error)) availability.failed(error)
  }
  // A client that loses its server emits 'error', idle in the pool (the pool's event) or lent
  // out to a transaction (the client's own, which the pool does not listen to while it is
  // lent). Unheard, either would end the process; the statement in flight fails by itself.
  // A lent one is also given back to the pool at once (see giveBackLostClient).
  const lent = new Set<pg.PoolClient>()
  pool.on('acquire', (client) => lent.add(client))
  pool.on('release', (_error, client) => lent.delete(client))
  pool.on('error', connectionLost)
  pool.on('connect', (client) =>
    client.on('error', (error) => {
      connectionLost(error)
      if (lent.has(client)) giveBackLostClient(client, error)
    }),
  )
  const db = drizzlePostgres(pool, { schema }) as unknown as Database
  // The driver's own error says why (refused, a wrong password, no such database); Drizzle's
  // would wrap it as a failed `select 1`.
  await pool.query('select 1').catch(async (error: Error) => {
    await pool.end().catch(() => undefined)
    throw new Error(`PostgreSQL at ${serverOf(connectionString)} cannot be used: ${error.message}`, { cause: error })
  })
  // Bounds on a hang, as these few connections carry every catalogue statement of the process
  // and are never recycled: the server cuts a statement at statementTimeoutMs; one unanswered
  // for 5 s more (a dead peer) destroys its connection and what is on it (node-postgres does so itself in
  // pipeline mode); keepalives find a dead idle peer.
  // Every catalogue statement is written so that one plan serves all its values (see
  // catalogue-page-plan.ts): planned once per connection, never per execution. Left to choose,
  // PostgreSQL planned a statement at every run where a plan for the values looked cheaper than
  // the plan for any values, and planning costs about what running it does.
  const pipelines = new PipelinedConnections(
    { ...server, statement_timeout: statementTimeoutMs, query_timeout: unansweredMs, options: '-c plan_cache_mode=force_generic_plan' },
    pipelinedConnections,
    connectionLost,
  )
  // Drizzle's session calls only `query(config, values)` on its client outside transactions,
  // which PipelinedConnections answers (and PipelinedDatabase has no `transaction`).
  const pipelined = drizzlePostgres(pipelines as unknown as pg.Client, { schema }) as unknown as PipelinedDatabase
  return {
    db,
    pipelined,
    kind: 'postgres',
    availability,
    // Keepalives find a dead peer of the idle listening connection; statements it sends are LISTEN only.
    listen: (channel, handlers) => listenForNotifications({ ...server, keepAliveInitialDelayMillis: 10_000 }, channel, handlers),
    async withSession(work) {
      // A connection of its own, outside the pool and its time limit on statements.
      const client = new pg.Client(server)
      client.on('error', connectionLost)
      await client.connect()
      try {
        return await work(drizzlePostgres(client, { schema }))
      } finally {
        await client.end().catch(() => undefined)
      }
    },
    async close() {
      availability.close()
      await Promise.all([pool.end(), pipelines.end()])
    },
  }
}

/**
 * Gives a lent client whose connection is lost back to the pool, which ends and forgets it;
 * its holder's own release, later if ever, does nothing. Not every holder releases: Drizzle's
 * transaction sends BEGIN before its try/finally, so a connection lost at that moment (a
 * server crash, or a terminated backend the pool lent out before reading its end) was never
 * given back. The pool stayed one client short for good; after a few outages it had none left
 * and every transaction waited for the connect timeout, a 503 long after the database was back.
 */
function giveBackLostClient(client: pg.PoolClient, error: Error): void {
  const release = client.release.bind(client)
  client.release = () => {}
  release(error)
}

/**
 * The pool's client, which ends its connection when a statement is unanswered for
 * `query_timeout`. node-postgres fails that statement alone and keeps the connection (outside
 * pipeline mode), still waiting on the answer, so every later statement would queue behind it
 * for as long as the network stays silent: a pool of such connections answers nothing even once
 * the database is back. Ended, the connection is dropped, from the pool if idle, or given back
 * and dropped if lent (see giveBackLostClient), and the next statement opens a new one.
 */
class ClientEndedWhenUnanswered extends pg.Client {
  // node-postgres' overloads: a callback last, or a promise returned.
  override query(...args: unknown[]): never {
    const send = super.query.bind(this) as (...sent: unknown[]) => unknown
    const callback = args.at(-1)
    if (typeof callback === 'function') {
      const answered = (error: unknown, result: unknown) => {
        this.endIfUnanswered(error)
        ;(callback as (error: unknown, result: unknown) => void)(error, result)
      }
      return send(...args.slice(0, -1), answered) as never
    }
    const result = send(...args)
    if (result instanceof Promise) result.catch((error: unknown) => this.endIfUnanswered(error))
    return result as never
  }

  private endIfUnanswered(error: unknown): void {
    if (error instanceof Error && error.message === UNANSWERED_MESSAGE)
      (this as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()
  }
}

/** What node-postgres fails a statement with after `query_timeout`. */
const UNANSWERED_MESSAGE = 'Query read timeout'

/** PGlite's start for a brief use (DatabaseOptions.brief): a 16 MB buffer pool. */
const BRIEF_START_PARAMS = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB']

async function openPglite(dir: string | undefined, dump: Blob | undefined, brief: boolean): Promise<DatabaseHandle> {
  const releaseLock = dir ? await lockDataDir(dir) : () => {}
  try {
    const client = await PGlite.create({
      ...(dir ? { dataDir: dir } : { loadDataDir: dump }),
      ...(brief ? { startParams: BRIEF_START_PARAMS } : {}),
    })
    const db = drizzlePglite(client, { schema }) as unknown as Database
    return {
      db,
      pipelined: db,
      kind: 'pglite',
      withSession: (work) => work(db),
      async listen(_channel, handlers) {
        handlers.listening()
        return { close: () => Promise.resolve() }
      },
      // In the process itself: it is there as long as the process is.
      availability: new DatabaseAvailability(() => Promise.resolve()),
      async close() {
        await client.close()
        releaseLock()
      },
    }
  } catch (error) {
    releaseLock()
    throw error
  }
}

/** Where a connection string points, without its credentials: host, port and database. */
function serverOf(connectionString: string): string {
  try {
    const url = new URL(connectionString)
    return `${url.host}${url.pathname}`
  } catch {
    return 'DATABASE_URL'
  }
}
