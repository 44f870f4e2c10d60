import pg from 'pg'

interface Connection {
  client: Promise<pg.Client>
  /** Statements sent on it and not answered yet. */
  unanswered: number
}

/**
 * A few connections in node-postgres' pipeline mode, shared by every caller: a statement is
 * sent at once, behind those already on its connection, and PostgreSQL runs them back to back.
 *
 * Why not the pool: a pool lends a connection to one statement, and the connection stays lent
 * until Node has read the answer. Under load Node is busy with other requests for a while
 * before it reads, and all that while the backend waits; on the bench's two cores a fifth of
 * the machine sat idle that way, and catalogue searches ran at 28 % of the ceiling, 39–45 %
 * pipelined (README, Performance).
 *
 * Only for statements that stand alone: each is its own transaction (node-postgres ends each
 * with a Sync), and a BEGIN sent here would take in whatever other callers send after it.
 * Each statement goes to the connection with the fewest unanswered, so a slow one holds up few
 * others. A connection that fails is dropped: its unanswered statements fail with it, as they
 * would on a pool, and the next statement opens a new one.
 */
export class PipelinedConnections {
  private readonly connections: (Connection | undefined)[]
  private closed = false

  constructor(
    private readonly config: pg.ClientConfig,
    size: number,
  ) {
    this.connections = Array.from({ length: size }, () => undefined)
  }

  /** The one call Drizzle's node-postgres session makes on its client outside transactions. */
  async query(config: pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult> {
    if (this.closed) throw new Error('The database connections are closed')
    const connection = this.leastBusy()
    connection.unanswered++
    try {
      const client = await connection.client
      return await client.query(config, values)
    } finally {
      connection.unanswered--
    }
  }

  async end(): Promise<void> {
    this.closed = true
    const open = this.connections.filter((connection) => connection !== undefined)
    this.connections.fill(undefined)
    await Promise.all(
      open.map(async (connection) => {
        const client = await connection.client.catch(() => undefined)
        await client?.end()
      }),
    )
  }

  /** The connection with the fewest unanswered statements; one not open (yet or again) counts as none. */
  private leastBusy(): Connection {
    let best: number | undefined
    for (let index = 0; index < this.connections.length; index++) {
      const unanswered = this.connections[index]?.unanswered ?? 0
      if (best === undefined || unanswered < (this.connections[best]?.unanswered ?? 0)) best = index
    }
    return this.connections[best!] ?? this.open(best!)
  }

  private open(index: number): Connection {
    const client = new pg.Client({ ...this.config, pipeline: true })
    const connection: Connection = { client: client.connect().then(() => client), unanswered: 0 }
    const drop = () => {
      if (this.connections[index] === connection) this.connections[index] = undefined
    }
    // Without a listener, a lost connection's 'error' would end the process.
    client.on('error', drop)
    client.on('end', drop)
    // A failed connect fails the statements waiting for it (they await `client`); the next opens anew.
    connection.client.catch(drop)
    this.connections[index] = connection
    return connection
  }
}
