import pg from 'pg'

/** What a listener tells its owner. */
export interface NotificationHandlers {
  /** A NOTIFY on the channel, with its payload. */
  notice(payload: string): void
  /**
   * The listener is (again) connected and listening. Notices sent while it was away are lost,
   * so whatever the owner keeps on their strength should be dropped now.
   */
  listening(): void
  /** The connection failed or dropped; the listener tries again by itself. */
  lost(error: Error | undefined): void
}

export interface NotificationListener {
  /** Stops listening and closes its connection; no handler is called afterwards. */
  close(): Promise<void>
}

/** The first retry after a lost connection; each failure doubles it, up to the longest. */
const FIRST_RETRY_MS = 100
const LONGEST_RETRY_MS = 5000

/**
 * LISTEN on one channel of a PostgreSQL server, on a connection of its own (a pooled one would
 * be handed to other work, and notices go only to the session that listens). A connection
 * that fails or drops (a server restart, a network cut) is replaced after a short pause,
 * doubling up to 5 s while it keeps failing; nothing of it ever reaches the process as an
 * unhandled error. Resolves once the first attempt has connected or failed, so a process that
 * starts beside a reachable server is listening before it answers requests.
 */
export async function listenForNotifications(config: pg.ClientConfig, channel: string, handlers: NotificationHandlers): Promise<NotificationListener> {
  /** Ends the connection in use, without a retry. */
  let endCurrent: (() => Promise<void>) | undefined
  let closed = false
  let retryMs = FIRST_RETRY_MS
  let retry: NodeJS.Timeout | undefined

  const connect = async (): Promise<void> => {
    retry = undefined
    const client = new pg.Client(config)
    let gone = false
    const end = async () => {
      gone = true
      if (endCurrent === end) endCurrent = undefined
      // The client may still emit (an error after its end): heard, and ignored, from here on.
      client.on('error', () => {})
      await client.end().catch(() => {})
    }
    const lose = (error?: Error) => {
      if (gone) return
      void end()
      if (closed) return
      handlers.lost(error)
      retry = setTimeout(() => void connect(), retryMs)
      retryMs = Math.min(retryMs * 2, LONGEST_RETRY_MS)
    }
    client.on('error', lose)
    client.on('end', () => lose())
    client.on('notification', (message) => {
      if (!gone && message.channel === channel) handlers.notice(message.payload ?? '')
    })
    try {
      await client.connect()
      await client.query(`LISTEN ${client.escapeIdentifier(channel)}`)
    } catch (error) {
      lose(error as Error)
      return
    }
    if (gone) return
    if (closed) return end()
    endCurrent = end
    retryMs = FIRST_RETRY_MS
    handlers.listening()
  }

  await connect()
  return {
    async close() {
      closed = true
      if (retry) clearTimeout(retry)
      await endCurrent?.()
    },
  }
}
