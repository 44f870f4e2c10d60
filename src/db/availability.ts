import type { Logger } from 'pino'
import { isTransactionConflict } from './conflicts.js'

/**
 * Node's codes for a connection that failed or dropped. They say nothing of what was at the other
 * end, so they count only on a system error (one with a `syscall`: connect, read, write,
 * getaddrinfo), which a socket of the process's own raises: the database driver's. An HTTP request
 * whose client went away fails with ECONNRESET too ("aborted"), but without a syscall, and it
 * is no sign of the database.
 */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE'])
/** PostgreSQL's codes meaning the database cannot be reached right now (not that a statement is wrong). */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown: the backend was terminated
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or shutting down
  '53300', // too_many_connections
  '08000',
  '08001',
  '08003',
  '08006', // connection exceptions
])
/**
 * What node-postgres and our pipelined connections say, without a code, when a connection is
 * gone, or silent past its time limit on a statement (`Query read timeout`).
 */
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Could not connect to the database|Client has encountered a connection error|connection is not queryable|Client was closed|Query read timeout/i

/**
 * node-postgres's pool when every one of its connections stayed busy for the whole connect
 * timeout: the process is saturated, not the database gone (a connection that cannot be made
 * says "Connection terminated due to connection timeout"). Answered 503 all the same.
 */
export function isPoolSaturated(error: unknown): boolean {
  let current: unknown = error
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current.message === 'timeout exceeded when trying to connect') return true
    current = current.cause
  }
  return false
}

/** Whether `error`, or anything it was caused by, says the database cannot be reached right now. */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const { code, syscall } = current as { code?: unknown; syscall?: unknown }
    if (typeof code === 'string' && UNAVAILABLE_SQLSTATES.has(code)) return true
    if (typeof code === 'string' && NETWORK_CODES.has(code) && typeof syscall === 'string') return true
    if (UNAVAILABLE_MESSAGES.test(current.message)) return true
    current = current.cause
  }
  return false
}

/** Statements cut short by a time limit (`statement_timeout`, `lock_timeout`) or a lack of resources. */
const CUT_SHORT_SQLSTATES = new Set(['57014', '55P03', '53000', '53100', '53200'])

/**
 * Whether the database cut a statement short for the moment's reasons: a time limit (a
 * maintenance lock held past it, say) or a lack of resources. The database answers; the same
 * statement may well run when sent again.
 */
export function isStatementCutShort(error: unknown): boolean {
  let current: unknown = error
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const { code } = current as { code?: unknown }
    if (typeof code === 'string' && CUT_SHORT_SQLSTATES.has(code)) return true
    current = current.cause
  }
  return false
}

/**
 * Whether work failed for the moment's reasons, not for what it was given: the database
 * unreachable or saturated, a conflict with another transaction, a time limit. The same work
 * may well succeed when run again.
 */
export function isMomentaryFailure(error: unknown): boolean {
  return isDatabaseUnavailable(error) || isPoolSaturated(error) || isTransactionConflict(error) || isStatementCutShort(error)
}

/** How often an outage is probed for its end. */
const PROBE_INTERVAL_MS = 1000

/**
 * Whether the database is reachable, as the process last saw it, so that an outage is logged
 * once at its start (error) and once at its end (info) rather than once per failed request. A
 * reported failure starts a probe, every second, until the database answers again.
 */
export class DatabaseAvailability {
  private downSince: number | undefined
  /** Settled when the outage under way ends. */
  private recovery: { promise: Promise<void>; end: () => void } | undefined
  private nextProbe: NodeJS.Timeout | undefined
  private closed = false
  private log: Pick<Logger, 'error' | 'info'> | undefined

  constructor(private readonly probe: () => Promise<unknown>) {}

  /** Where the outage and the recovery are logged; nothing is logged before a logger is given. */
  useLogger(log: Pick<Logger, 'error' | 'info'>): void {
    this.log = log
  }

  get isDown(): boolean {
    return this.downSince !== undefined
  }

  /** Resolves when the outage under way ends (seen by the probe, or the database closed); at once without one. */
  whenAvailable(): Promise<void> {
    return this.recovery?.promise ?? Promise.resolve()
  }

  /**
   * A connection failed or dropped: the start of an outage, unless one is already known. A
   * saturated pool is none: the database answers, this process has more work than connections.
   */
  failed(error: unknown): void {
    if (this.downSince !== undefined || this.closed || isPoolSaturated(error)) return
    this.downSince = Date.now()
    let end = () => {}
    const promise = new Promise<void>((resolve) => (end = resolve))
    this.recovery = { promise, end }
    this.log?.error({ err: error }, 'the database is unreachable; requests that need it answer 503 until it is back')
    this.scheduleProbe()
  }

  /** Stops probing: the database is being closed on purpose. */
  close(): void {
    this.closed = true
    clearTimeout(this.nextProbe)
    this.ended()
  }

  private scheduleProbe(): void {
    this.nextProbe = setTimeout(() => void this.check(), PROBE_INTERVAL_MS)
    this.nextProbe.unref()
  }

  private async check(): Promise<void> {
    if (this.closed || this.downSince === undefined) return
    try {
      await this.probe()
    } catch {
      this.scheduleProbe()
      return
    }
    this.log?.info({ outageMs: Date.now() - this.downSince }, 'the database is reachable again')
    this.downSince = undefined
    this.ended()
  }

  private ended(): void {
    this.recovery?.end()
    this.recovery = undefined
  }
}
