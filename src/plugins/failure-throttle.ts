import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible'
import { ApiError } from '../lib/errors.js'
import { clientNetwork } from '../lib/client-connection.js'

declare module 'fastify' {
  interface FastifyInstance {
    failureThrottle: FailureThrottle
  }
}

/**
 * Failed key checks (`X-API-Key`, `X-Admin-Key`) and requests for routes that do not exist,
 * counted per client address. Past RATE_LIMIT_FAILURES_PER_MINUTE an address gets 429s on
 * the keyed routes and unknown URLs until its minute is over: guessing keys or scanning for
 * routes costs the guesser time, and a blocked address's requests cost no database lookup.
 */
export interface FailureThrottle {
  /**
   * onRequest hook: a 429 for an address over its failures, before any work on the request
   * (once this process's reservations of the address have settled: see `reserve`).
   */
  check: (request: FastifyRequest) => Promise<void>
  /**
   * Takes one of the address's failures at once, before a key is looked up or compared (or an
   * unknown route answered), so that requests sent together cannot all pass `check` first; the reservation is then kept
   * (the key was wrong) or refunded (it was right). When none is left but this process has
   * reservations of the address still out, it waits for them to settle first: they may be
   * right keys whose failures come back (an integrator's many agencies' keys, none cached
   * yet). Otherwise it throws the 429.
   */
  reserve: (request: FastifyRequest) => Promise<Reservation>
}

export interface Reservation {
  /** The key was wrong: the failure stays counted. */
  keep(): void
  /** The key was right, or could not be checked: the failure is given back. */
  refund(): Promise<void>
}

const WINDOW_S = 60

/**
 * Counted in Redis when REDIS_URL is set, so that every API process sees an address's
 * failures wherever they were made; otherwise in this process. While Redis cannot be reached,
 * each process counts alone (the outage logged once) rather than letting every guess through
 * or refusing every request.
 */
export default fp(
  async function failureThrottlePlugin(app: FastifyInstance) {
    const limit = app.config.rateLimits.failuresPerMinute
    if (!app.config.rateLimits.enabled) {
      const nothing = async () => {}
      const reservation: Reservation = { keep: () => {}, refund: nothing }
      app.decorate('failureThrottle', { check: nothing, reserve: async () => reservation })
      return
    }

    const options = { keyPrefix: `${app.config.redisKeyPrefix}mls-failures`, points: limit, duration: WINDOW_S }
    const local = new RateLimiterMemory(options)
    const redis = app.rateLimitRedis
    const shared = redis ? new RateLimiterRedis({ ...options, storeClient: redis, rejectIfRedisNotReady: true }) : undefined

    const outstanding = new OutstandingReservations()
    /**
     * An address over its failures waits while this process has reservations of it out (they
     * may come back: see `reserve`), after `meanwhile`; with none out, it is refused.
     */
    const untilOneSettles = async (address: string, count: RateLimiterRes, meanwhile?: () => Promise<unknown>) => {
      const settled = outstanding.nextSettled(address)
      if (!settled) throw tooManyFailures(count)
      await meanwhile?.()
      await settled
    }
    const health = app.rateLimitRedisHealth
    /** In Redis, or in this process while Redis is out (RedisHealth, which logs the outage). */
    const counted = async <T>(operation: (limiter: RateLimiterAbstract) => Promise<T>): Promise<T> => {
      if (!shared || !health?.usable) return operation(local)
      try {
        const result = await operation(shared)
        health.answered()
        return result
      } catch (error) {
        // Over the limit, not an outage: rate-limiter-flexible refuses a consume with its result.
        if (error instanceof RateLimiterRes) {
          health.answered()
          throw error
        }
        health.failed(error)
        return operation(local)
      }
    }

    app.decorate('failureThrottle', {
      check: async (request: FastifyRequest) => {
        const address = clientNetwork(request.ip)
        for (;;) {
          const count = await counted((limiter) => limiter.get(address))
          if (!count || count.consumedPoints < limit) return
          await untilOneSettles(address, count)
        }
      },
      reserve: async (request: FastifyRequest) => {
        const address = clientNetwork(request.ip)
        for (;;) {
          try {
            await counted((limiter) => limiter.consume(address))
            break
          } catch (error) {
            if (!(error instanceof RateLimiterRes)) throw error
            // A refused consume still counts its point: taken back while this one waits to ask again.
            await untilOneSettles(address, error, () => counted((limiter) => limiter.reward(address)))
          }
        }
        outstanding.add(address)
        let settled = false
        return {
          keep: () => {
            if (settled) return
            settled = true
            outstanding.settle(address, false)
          },
          refund: async () => {
            if (settled) return
            settled = true
            // Given back before anyone waiting is woken to ask again.
            try {
              await counted((limiter) => limiter.reward(address))
            } finally {
              outstanding.settle(address, true)
            }
          },
        }
      },
    })
  },
  { name: 'failure-throttle', dependencies: ['rate-limit'], decorators: { fastify: ['config'] } },
)

/** This process's reservations not yet kept or refunded, per address, and who waits for one to settle. */
class OutstandingReservations {
  private readonly byAddress = new Map<string, { count: number; waiting: (() => void)[] }>()

  add(address: string): void {
    const entry = this.byAddress.get(address)
    if (entry) entry.count++
    else this.byAddress.set(address, { count: 1, waiting: [] })
  }

  /**
   * One of the address's reservations settled. A refund frees one failure, so one waiting
   * request asks again; when none is left out, every waiting request is answered (a 429 if
   * still over), so a burst of wrong keys costs one wake-up each, not one per settlement.
   */
  settle(address: string, freed: boolean): void {
    const entry = this.byAddress.get(address)
    if (!entry) return
    if (--entry.count === 0) {
      this.byAddress.delete(address)
      for (const wake of entry.waiting.splice(0)) wake()
    } else if (freed) {
      entry.waiting.shift()?.()
    }
  }

  /** Settles when one of the address's reservations does; undefined when none is out. */
  nextSettled(address: string): Promise<void> | undefined {
    const entry = this.byAddress.get(address)
    return entry && new Promise((resolve) => entry.waiting.push(resolve))
  }
}

function tooManyFailures(count: RateLimiterRes): ApiError {
  const seconds = Math.max(1, Math.ceil(count.msBeforeNext / 1000))
  return new ApiError(
    'rate_limited',
    `Too many failed requests from this address (wrong keys or unknown routes); retry in ${seconds} seconds.`,
    {},
    { 'retry-after': String(seconds) },
  )
}
