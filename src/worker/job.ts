import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Services } from '../services.js'

/** What a job gets to do its work: the process's services, never a database of its own. */
export interface JobContext {
  services: Services
  config: Config
  log: Logger
  /** Aborted when the worker stops: a job finishes the item in hand and returns. */
  signal: AbortSignal
}

/**
 * One kind of background work (the internal check of listings, webhook delivery, ...).
 * `runOnce` does a bounded batch and says how many items it handled; the worker calls it
 * again at once while there is work and waits `idleDelayMs` when there is none. Jobs claim
 * their rows in the database (FOR UPDATE SKIP LOCKED), so any number of workers may run.
 */
export interface Job {
  name: string
  idleDelayMs: number
  /**
   * NOTIFY channels whose notices end the job's idle pause at once (PostgreSQL only), so work
   * another process announces starts without waiting for the next poll. A notice may be lost
   * (the listening connection drops), so the pause stays what finds all work in the end.
   */
  wakeOn?: readonly string[]
  runOnce(context: JobContext): Promise<number>
  /** Waits for work still in flight once the job's loop has ended. */
  stop?(): Promise<void>
}
