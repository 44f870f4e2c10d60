import { performance } from 'node:perf_hooks'
import pg from 'pg'

interface Connection {
  client: pg.Client
  /** Whether this tick's statements are being gathered into one write (see holdWritesUntilTickEnds). */
  corked: boolean
  /** Settles once the connection is open, or has failed to open. */
  opened: Promise<void>
  isOpen: boolean
  /** When each unanswered statement was sent, oldest first (answers come back in that order). */
  sentAt: number[]
}

/** A statement unanswered this long marks its connection as held up: others are preferred. */
export const HELD_UP_MS = 10
/** After a failed connect, the slot stays empty this long while another connection is open. */
const RECONNECT_PAUSE_MS = 1000

/**
 * A few connections in node-postgres' pipeline mode, shared by every caller: a statement is
 * sent at once, behind those already on its connection, and PostgreSQL runs them back to back.
 *
 * Why not the pool: a pool lends a connection to one statement, and the connection stays lent
 * until Node has read the answer. Under load Node is busy with other requests for a while
 * before it reads, and all that while the backend waits, leaving cores idle
 * (docs/performance.md#pipelined-statements).
 *
 * Only for statements that stand alone: each is its own transaction (node-postgres ends each
 * with a Sync), and a BEGIN sent here would take in whatever other callers send after it.
 *
 * Which connection: an open one, never one still opening while another is open (so a connect
 * that fails fails no statement that had somewhere else to go); of those, one whose oldest
 * unanswered statement is not held up (a very deep page), then the one with the fewest
 * unanswered, then the one whose oldest unanswered was sent last. A connection that fails is
 * closed and dropped: every statement still on it fails, and the next statement opens a new
 * one. Empty slots are refilled in the background. With none open, a statement waits for the
 * first to open, and fails only when every one tried has failed.
 */
export class PipelinedConnections {
  private readonly connections: (Connection | undefined)[]
  private readonly failedAt: number[]
  private lastFailure: unknown
  private closed = false

  constructor(
    private readonly config: pg.ClientConfig,
    size: number,
    /** Told of every connection that fails to open or is lost. */
    private readonly onConnectionError: (error: Error) => void = () => {},
    /** How long an unanswered statement takes to mark its connection as held up (tests widen it). */
    private readonly heldUpMs = HELD_UP_MS,
  ) {
    this.connections = Array.from({ length: size }, () => undefined)
    this.failedAt = Array.from({ length: size }, () => -Infinity)
  }

  /** The one call Drizzle's node-postgres session makes on its client outside transactions. */
  async query(config: pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult> {
    if (this.closed) throw new Error('The database connections are closed')
    // Chosen and counted in one go: statements sent together spread over the connections.
    const connection = this.bestOpen() ?? (await this.firstToOpen())
    connection.sentAt.push(performance.now())
    holdWritesUntilTickEnds(connection)
    try {
      return await connection.client.query(config, values)
    } finally {
      connection.sentAt.shift()
    }
  }

  async end(): Promise<void> {
    this.closed = true
    const all = this.connections.filter((connection) => connection !== undefined)
    this.connections.fill(undefined)
    await Promise.all(all.map((connection) => connection.client.end().catch(() => undefined)))
  }

  /** The open connection to send to (see the class), if any; empty slots start opening. */
  private bestOpen(): Connection | undefined {
    const now = performance.now()
    let best: Connection | undefined
    for (let index = 0; index < this.connections.length; index++) {
      const connection = this.connections[index] ?? (now - this.failedAt[index]! >= RECONNECT_PAUSE_MS ? this.open(index) : undefined)
      if (connection?.isOpen && (!best || isBetter(connection, best, now, this.heldUpMs))) best = connection
    }
    return best
  }

  /** With none open: the first connection to open. Fails once every one tried has failed. */
  private async firstToOpen(): Promise<Connection> {
    for (let waited = false; ; waited = true) {
      if (this.closed) throw new Error('The database connections are closed')
      const open = this.bestOpen()
      if (open) return open
      const opening = this.connections.filter((connection) => connection !== undefined)
      if (opening.length === 0) {
        if (waited) throw new Error('Could not connect to the database', { cause: this.lastFailure })
        // Every slot failed to open a moment ago: one more try, now, for this statement.
        opening.push(this.open(0))
      }
      await Promise.race(opening.map((connection) => connection.opened))
    }
  }

  private open(index: number): Connection {
    const client = new pg.Client({ ...this.config, pipeline: true })
    const connection: Connection = { client, corked: false, opened: Promise.resolve(), isOpen: false, sentAt: [] }
    let dropped = false
    // Once per connection, on whichever of 'error', 'end' or a failed connect comes first.
    const drop = () => {
      if (dropped) return
      dropped = true
      if (this.connections[index] === connection) this.connections[index] = undefined
      if (!connection.isOpen) this.failedAt[index] = performance.now()
      connection.isOpen = false
      // Closes the socket (and so the backend) whatever made the client give up.
      client.end().catch(() => undefined)
    }
    // Without a listener, a lost connection's 'error' would end the process.
    client.on('error', (error) => {
      this.onConnectionError(error)
      drop()
    })
    client.on('end', drop)
    connection.opened = client.connect().then(
      () => {
        connection.isOpen = this.connections[index] === connection
      },
      (error: unknown) => {
        this.lastFailure = error
        if (error instanceof Error) this.onConnectionError(error)
        drop()
      },
    )
    this.connections[index] = connection
    return connection
  }
}

/**
 * Gathers the statements sent on a connection during this tick into one socket write. node-postgres
 * writes each statement as soon as it is queued; under load the answers to one catalogue read
 * (the catalogue counters) release dozens of requests in one burst, and their statements would
 * cost a system call each, in Node and in the backend that reads them. The stream is corked
 * on the first statement of a tick and uncorked once the tick's work and promise jobs are done.
 */
function holdWritesUntilTickEnds(connection: Connection): void {
  if (connection.corked) return
  // The client's stream is node-postgres' own; it is there from the moment the client exists.
  const stream = (connection.client as unknown as { connection: { stream: NodeJS.WritableStream & { cork(): void; uncork(): void } } }).connection.stream
  connection.corked = true
  stream.cork()
  process.nextTick(() => {
    connection.corked = false
    stream.uncork()
  })
}

/** Whether `a` should take the next statement rather than `b` (see PipelinedConnections). */
function isBetter(a: Connection, b: Connection, now: number, heldUpMs: number): boolean {
  const heldUp = (connection: Connection) => connection.sentAt.length > 0 && now - connection.sentAt[0]! > heldUpMs
  if (heldUp(a) !== heldUp(b)) return heldUp(b)
  if (a.sentAt.length !== b.sentAt.length) return a.sentAt.length < b.sentAt.length
  return (a.sentAt[0] ?? Infinity) > (b.sentAt[0] ?? Infinity)
}
