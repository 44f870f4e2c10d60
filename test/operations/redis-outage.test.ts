import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, type Tenant } from '../helpers/factories.js'
import { hasRedisServer, startOwnRedis, stopOwnRedis } from '../helpers/own-redis.js'
import { freePort } from '../helpers/service-process.js'

/**
 * A Redis that stops answering while the service runs, frozen (SIGSTOP) as a stuck server or a
 * network partition leaves it: the connection stays open and nothing answers. This file's own
 * throwaway redis-server, never the machine's.
 */
const skip = hasRedisServer() ? false : 'needs redis-server'

describe('Redis for rate limits that stops answering while the service runs', { skip }, () => {
  const PINO_WARN = 40
  let t: TestApp
  let redis: ChildProcess
  let agency: Tenant
  const lines: { level: number; msg: string }[] = []
  before(async () => {
    const port = await freePort()
    redis = await startOwnRedis(port)
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) })
    t = await buildTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_CATALOGUE_PER_MINUTE: '2', REDIS_URL: `redis://127.0.0.1:${port}` }, { logger })
    assert.equal(t.app.rateLimitRedis?.status, 'ready')
    agency = await createTenant(t.app)
  })
  after(async () => {
    await t.close()
    await stopOwnRedis(redis)
  })

  it('logs the outage at warn when Redis stops answering, as it lets catalogue requests through uncounted', async () => {
    // Frozen, as a Redis stuck or cut off by a network partition is: the connection stays open, nothing answers.
    redis.kill('SIGSTOP')
    try {
      const statuses = []
      for (let i = 0; i < 4; i++) statuses.push((await t.app.inject({ url: '/mls/properties', remoteAddress: '198.51.100.160' })).statusCode)
      // Let through, as documented (uncounted: a limit of 2 and four 200s) ...
      assert.deepEqual(statuses, [200, 200, 200, 200])
      // ... and, docs/operations.md: the outage logged once at warn.
      const warnings = lines.filter((line) => line.level >= PINO_WARN && /redis/i.test(line.msg))
      assert.equal(warnings.length, 1, `warnings about Redis while every limit was off: ${JSON.stringify(warnings)}`)
    } finally {
      redis.kill('SIGCONT')
    }
  })

  it('does not make every agency request wait seconds for a Redis that stopped answering', async () => {
    // The agency's key is cached: its requests need no lookup.
    assert.equal((await t.app.inject({ url: '/tenants/me', headers: agency.headers, remoteAddress: '198.51.100.161' })).statusCode, 200)
    redis.kill('SIGSTOP')
    try {
      // The first request may spend a command timeout (1 s) finding out that Redis does not answer.
      assert.equal((await t.app.inject({ url: '/tenants/me', headers: agency.headers, remoteAddress: '198.51.100.161' })).statusCode, 200)
      const timings = []
      for (let i = 0; i < 3; i++) {
        const started = Date.now()
        const response = await t.app.inject({ url: '/tenants/me', headers: agency.headers, remoteAddress: '198.51.100.161' })
        assert.equal(response.statusCode, 200, response.body)
        timings.push(Date.now() - started)
      }
      // Known to be out, Redis no longer holds each request for its command timeout (1 s; an
      // unknown key's request waited for four): a bound on a hang, with room for a busy machine.
      assert.ok(
        timings.every((ms) => ms < 900),
        `each request with a cached key took ${timings.join(', ')} ms while Redis did not answer`,
      )
    } finally {
      redis.kill('SIGCONT')
    }
  })
})
