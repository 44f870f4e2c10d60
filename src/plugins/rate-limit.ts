import rateLimit, { type RateLimitOptions } from '@fastify/rate-limit'
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { Redis } from 'ioredis'
import { ApiError } from '../lib/errors.js'
import { clientNetwork } from '../lib/client-connection.js'

const CONNECT_TIMEOUT_MS = 500
/** How long a Redis that failed a command is left alone before the limits try it again. */
const REDIS_RETRY_MS = 5000

/**
 * Whether the Redis of the rate limits answers, as their commands last found it. A command that
 * fails or goes unanswered (a Redis frozen, a network partition: ioredis's commandTimeout) takes
 * it out for REDIS_RETRY_MS: meanwhile requests go on at once, uncounted (the failure throttle
 * counts in the process), instead of each waiting for the timeout again; then the next command
 * tries it. The outage is logged once when it starts and once when it ends.
 */
export class RedisHealth {
  #outUntil = 0
  #out = false
  constructor(private readonly log: FastifyBaseLogger) {}

  get usable(): boolean {
    return Date.now() >= this.#outUntil
  }

  failed(error: unknown): void {
    this.#outUntil = Date.now() + REDIS_RETRY_MS
    if (this.#out) return
    this.#out = true
    this.log.warn({ err: error }, 'redis for rate limits is unavailable; requests go on uncounted meanwhile')
  }

  answered(): void {
    if (!this.#out) return
    this.#out = false
    this.#outUntil = 0
    this.log.info('redis for rate limits is reachable again')
  }
}

type Callback = (error: Error | null, result?: unknown) => void

/**
 * The Redis client as @fastify/rate-limit's store sees it: its counting commands (defined by the
 * store on the client) go through `health`, answered at once with an error while Redis is out
 * (skipOnError lets the request go on uncounted), and report how Redis answered otherwise.
 */
function healthGuarded(redis: Redis, health: RedisHealth): Redis {
  return new Proxy(redis, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if ((property !== 'rateLimit' && property !== 'rateLimitRead') || typeof value !== 'function') return value
      return (...args: unknown[]) => {
        const callback = args.pop() as Callback
        if (!health.usable) return callback(new Error('redis for rate limits is out'))
        ;(value as (...args: unknown[]) => void).call(target, ...args, (error: Error | null, result?: unknown) => {
          if (error) health.failed(error)
          else health.answered()
          callback(error, result)
        })
      }
    },
  })
}

/** Limits that apply to one route each (docs/api.md#rate-limits). */
export type RateLimitPolicy = 'registration'

declare module 'fastify' {
  interface FastifyInstance {
    /** Route `config.rateLimit` for a policy; `false` when RATE_LIMIT_ENABLED=false. */
    rateLimitFor(policy: RateLimitPolicy): RateLimitOptions | false
    /** onRequest hook for authenticated scopes, after `authenticate`: one count per API key. */
    apiKeyRateLimit: onRequestHookHandler
    /** onRequest hook for the public catalogue: one count per client address across its routes. */
    catalogueRateLimit: onRequestHookHandler
    /** onRequest hook for a registration's status lookup, GET and HEAD counted together per client address. */
    registrationStatusRateLimit: onRequestHookHandler
    /** The connection counts are kept in when REDIS_URL is set, for other counters to share. */
    rateLimitRedis: Redis | undefined
    /** Whether that Redis answers (RedisHealth); undefined without it. */
    rateLimitRedisHealth: RedisHealth | undefined
  }
}

/**
 * Rate limits, counted in Redis when REDIS_URL is set so that every API process shares
 * one count, otherwise in this process. A Redis outage lets requests through (logged) rather
 * than taking the API down with it.
 */
export default fp(
  async function rateLimitPlugin(app: FastifyInstance) {
    const limits = app.config.rateLimits
    // A command that gets no answer (a Redis frozen, a network partition) fails after
    // commandTimeout, and the request goes on uncounted, rather than waiting with it.
    const redis = app.config.redisUrl
      ? new Redis(app.config.redisUrl, { connectTimeout: CONNECT_TIMEOUT_MS, commandTimeout: 1000, maxRetriesPerRequest: 1, enableOfflineQueue: false })
      : undefined
    const health = redis ? new RedisHealth(app.log) : undefined
    app.decorate('rateLimitRedis', redis)
    app.decorate('rateLimitRedisHealth', health)
    if (redis && health) {
      // ioredis reports an error at every reconnection attempt (every two seconds at most):
      // RedisHealth logs an outage when it starts and when it ends, not at each of them.
      redis.on('error', (error) => health.failed(error))
      redis.on('ready', () => health.answered())
      app.addHook('onClose', async () => {
        redis.disconnect()
      })
      await connectedOrFailed(redis)
    }

    await app.register(rateLimit, {
      global: false,
      redis: redis && health ? healthGuarded(redis, health) : undefined,
      nameSpace: `${app.config.redisKeyPrefix}mls-rate-limit:`,
      skipOnError: true,
      keyGenerator: (request) => clientNetwork(request.ip),
      enableDraftSpec: true, // RateLimit-* headers beside Retry-After
      errorResponseBuilder: (_request, context) => new ApiError('rate_limited', `Too many requests; retry in ${context.after}.`),
    })

    // Counted by client address, an IPv6 client by its /64 (the plugin's keyGenerator, above).
    const policies: Record<RateLimitPolicy, RateLimitOptions> = {
      registration: { max: limits.registrationPerHour, timeWindow: '1 hour', groupId: 'registration' },
    }
    app.decorate('rateLimitFor', (policy: RateLimitPolicy) => (limits.enabled ? policies[policy] : false))

    // Limits shared by several routes are hooks on one store (route configs each get their
    // own, and a GET route's HEAD is a route of its own); the key prefix keeps their counts apart.
    const sharedLimit = (max: number, key: (request: FastifyRequest) => string): onRequestHookHandler =>
      limits.enabled ? app.rateLimit({ max, timeWindow: '1 minute', keyGenerator: key }) : async () => {}
    // Counted by key, so it runs after authentication.
    app.decorate(
      'apiKeyRateLimit',
      sharedLimit(limits.apiKeyPerMinute, (request) => `key:${request.apiKeyId}`),
    )
    app.decorate(
      'catalogueRateLimit',
      sharedLimit(limits.cataloguePerMinute, (request) => `catalogue:${clientNetwork(request.ip)}`),
    )
    // A HEAD answers 200 or 404 as the GET does: counted apart, it would double the lookups an
    // address may make to probe codes and e-mails.
    app.decorate(
      'registrationStatusRateLimit',
      sharedLimit(limits.registrationStatusPerMinute, (request) => `registration-status:${clientNetwork(request.ip)}`),
    )
  },
  { name: 'rate-limit', decorators: { fastify: ['config'] } },
)

/**
 * Waits until Redis has answered, or failed to, before the service takes requests: until then
 * a command fails at once (no offline queue) and the request would go on uncounted, so a burst
 * at start would pass its limit while Redis is up.
 */
function connectedOrFailed(redis: Redis): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      redis.off('ready', done)
      redis.off('error', done)
      resolve()
    }
    // An unreachable Redis has reported an error by then.
    const timer = setTimeout(done, 2 * CONNECT_TIMEOUT_MS)
    redis.once('ready', done)
    redis.once('error', done)
  })
}
