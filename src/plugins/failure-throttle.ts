import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import ipaddr from 'ipaddr.js'
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible'
import { ApiError } from '../lib/errors.js'

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
  /** onRequest hook: a 429 for an address over its failures, before any work on the request. */
  check: (request: FastifyRequest) => Promise<void>
  /** Counts one failure of the request's address. */
  record: (request: FastifyRequest) => Promise<void>
  /**
   * Takes one of the address's failures at once, or throws the 429 if none is left: before a
   * key is looked up or compared, so that requests sent together cannot all pass `check`
   * first. `refund` gives it back when the key was right.
   */
  reserve: (request: FastifyRequest) => Promise<void>
  refund: (request: FastifyRequest) => Promise<void>
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
      app.decorate('failureThrottle', { check: nothing, record: nothing, reserve: nothing, refund: nothing })
      return
    }

    const options = { keyPrefix: `${app.config.redisKeyPrefix}mls-failures`, points: limit, duration: WINDOW_S }
    const local = new RateLimiterMemory(options)
    const redis = app.rateLimitRedis
    const shared = redis ? new RateLimiterRedis({ ...options, storeClient: redis, rejectIfRedisNotReady: true }) : undefined

    let outage = false
    const counted = async <T>(operation: (limiter: RateLimiterAbstract) => Promise<T>): Promise<T> => {
      if (!shared) return operation(local)
      try {
        const result = await operation(shared)
        if (outage) {
          outage = false
          app.log.info('redis for failure counts is reachable again')
        }
        return result
      } catch (error) {
        // Over the limit, not an outage: rate-limiter-flexible refuses a consume with its result.
        if (error instanceof RateLimiterRes) throw error
        if (!outage) {
          outage = true
          app.log.warn({ err: error }, 'redis for failure counts is unavailable; each process counts alone meanwhile')
        }
        return operation(local)
      }
    }

    app.decorate('failureThrottle', {
      check: async (request: FastifyRequest) => {
        const count = await counted((limiter) => limiter.get(clientKey(request.ip)))
        if (count && count.consumedPoints >= limit) throw tooManyFailures(count)
      },
      record: async (request: FastifyRequest) => {
        await counted((limiter) => limiter.penalty(clientKey(request.ip)))
      },
      reserve: async (request: FastifyRequest) => {
        try {
          await counted((limiter) => limiter.consume(clientKey(request.ip)))
        } catch (error) {
          throw error instanceof RateLimiterRes ? tooManyFailures(error) : error
        }
      },
      refund: async (request: FastifyRequest) => {
        await counted((limiter) => limiter.reward(clientKey(request.ip)))
      },
    })
  },
  { name: 'failure-throttle', dependencies: ['rate-limit'], decorators: { fastify: ['config'] } },
)

function tooManyFailures(count: RateLimiterRes): ApiError {
  const seconds = Math.max(1, Math.ceil(count.msBeforeNext / 1000))
  return new ApiError(
    'rate_limited',
    `Too many failed requests from this address (wrong keys or unknown routes); retry in ${seconds} seconds.`,
    {},
    { 'retry-after': String(seconds) },
  )
}

/**
 * The address failures are counted by. An IPv6 client usually holds a whole /64, and could
 * otherwise take a fresh address for every 30 guesses.
 */
function clientKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip
  const address = ipaddr.process(ip)
  if (address.kind() === 'ipv4') return address.toString()
  const network = (address as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16))
  return `${network.join(':')}::/64`
}
