import assert from 'node:assert/strict'
import { once } from 'node:events'
import { rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import { Counter, Registry } from 'prom-client'
import { startMetricsListener } from '../../src/metrics-listener.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import type { OpenApiDocument } from '../helpers/openapi.js'
import type { ErrorBody } from '../helpers/responses.js'
import { newDataDir } from '../helpers/database.js'
import { freePort, startApiProcess, type ApiProcess } from '../helpers/service-process.js'

const TOKEN = 'metrics-token-0123456789abcdef'
const NOT_FOUND = { detail: 'There is no GET /metrics route.' }

describe('metrics on the public port, without METRICS_TOKEN', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  it('are a 404 like any unknown route', async () => {
    for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }]) {
      const response = await t.app.inject({ url: '/metrics', headers })
      assert.equal(response.statusCode, 404)
      assert.deepEqual(response.json<ErrorBody>(), NOT_FOUND)
    }
  })

  it('are in neither public document, nor are the operator routes', async () => {
    for (const url of ['/openapi.json', '/docs/json']) {
      const document = (await t.app.inject(url)).json<OpenApiDocument>()
      const paths = Object.keys(document.paths)
      assert.ok(paths.includes('/mls/properties'), url)
      assert.deepEqual(
        paths.filter((name) => name.startsWith('/admin') || name.startsWith('/metrics')),
        [],
        url,
      )
      assert.ok(!JSON.stringify(document).includes('/metrics'), `${url} does not mention /metrics`)
    }
  })
})

describe('metrics on the public port, with METRICS_TOKEN', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({ METRICS_TOKEN: TOKEN, RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_FAILURES_PER_MINUTE: '3' })
  })
  after(() => t.close())

  it('are a 404 without the token', async () => {
    const wrong = [undefined, 'Bearer not-the-token-0123456789', `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`, TOKEN, `Bearer ${TOKEN}x`]
    for (const [index, authorization] of wrong.entries()) {
      // An address each: these are failures, and three would use up an address's allowance here.
      const response = await t.app.inject({ url: '/metrics', headers: authorization ? { authorization } : {}, remoteAddress: `203.0.113.${60 + index}` })
      assert.equal(response.statusCode, 404, String(authorization))
      assert.deepEqual(response.json<ErrorBody>(), NOT_FOUND)
    }
  })

  it('answer without the token with the very headers of an unknown route, so that whether a token is set does not show', async () => {
    // An address each, as these are failures of the address.
    const headersOf = async (url: string, remoteAddress: string) =>
      Object.keys((await t.app.inject({ url, headers: { origin: 'https://portal.example' }, remoteAddress })).headers)
        .filter((name) => !['x-request-id', 'date', 'content-length'].includes(name))
        .sort()
    assert.deepEqual(await headersOf('/metrics', '203.0.113.90'), await headersOf('/metricz', '203.0.113.91'))
  })

  it('count a wrong token as a failure of the address, like an unknown route', async () => {
    const guesser = '203.0.113.70'
    for (let i = 0; i < 3; i++) {
      const response = await t.app.inject({ url: '/metrics', headers: { authorization: `Bearer guess-${i}-0123456789abcdef` }, remoteAddress: guesser })
      assert.equal(response.statusCode, 404)
    }
    const refused = await t.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` }, remoteAddress: guesser })
    assert.equal(refused.statusCode, 429)
    assert.ok(refused.headers['retry-after'])
  })

  it('are Prometheus text by route template, not by raw URL, with the token', async () => {
    await t.app.inject('/cities/1')
    await t.app.inject('/cities/2')
    await t.app.inject('/no/such/route/123')
    const response = await t.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })
    assert.equal(response.statusCode, 200)
    assert.match(response.headers['content-type'] as string, /^text\/plain/)
    assert.equal(response.headers['cache-control'], 'no-store')
    assert.match(response.body, /http_requests_total\{method="GET",route="\/cities\/:id",status_code="200"\} 2/)
    assert.match(response.body, /http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/cities\/:id",status_code="200"\}/)
    assert.match(response.body, /route="unmatched",status_code="404"/)
    assert.ok(!response.body.includes('/cities/1"'))
    assert.match(response.body, /process_cpu_user_seconds_total/)
  })

  it('stay out of the public document', async () => {
    const document = (await t.app.inject('/openapi.json')).json<OpenApiDocument>()
    assert.ok(!Object.keys(document.paths).includes('/metrics'))
  })
})

/** A logger that keeps its lines, to read what was logged. */
function capturingLogger() {
  const lines: { level: number; msg: string }[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as { level: number; msg: string })
      done()
    },
  })
  return { log: pino({ level: 'info' }, stream), lines }
}

describe('the metrics listener', () => {
  it('answers GET /metrics with the registry, and nothing else', async () => {
    const registry = new Registry()
    new Counter({ name: 'listener_test_total', help: 'A counter of this test.', registers: [registry] }).inc(3)
    const { log } = capturingLogger()
    const listener = await startMetricsListener({ registry, host: '127.0.0.1', port: 0, log })
    assert.ok(listener)
    try {
      const response = await fetch(listener.url)
      assert.equal(response.status, 200)
      assert.match(response.headers.get('content-type')!, /^text\/plain/)
      assert.match(await response.text(), /^listener_test_total 3$/m)

      const elsewhere = await fetch(listener.url.replace('/metrics', '/healthz'))
      assert.equal(elsewhere.status, 404)
      assert.deepEqual(await elsewhere.json(), { detail: 'There is no GET /healthz route.' })
      const posted = await fetch(listener.url, { method: 'POST' })
      assert.equal(posted.status, 405)
      assert.match(((await posted.json()) as ErrorBody).detail, /^Only GET and HEAD/)
    } finally {
      await listener.close()
    }
  })

  it('logs a port already in use as an error and lets the caller go on', async () => {
    const taken = createServer()
    taken.listen(0, '127.0.0.1')
    await once(taken, 'listening')
    const { port } = taken.address() as { port: number }
    try {
      const { log, lines } = capturingLogger()
      const listener = await startMetricsListener({ registry: new Registry(), host: '127.0.0.1', port, log })
      assert.equal(listener, undefined)
      const error = lines.find((line) => line.level === 50)
      assert.match(error?.msg ?? '', new RegExp(`^Cannot serve metrics on 127\\.0\\.0\\.1:${port}; the API goes on without them`))
    } finally {
      taken.close()
    }
  })
})

describe('an API process with METRICS_PORT', () => {
  const dataDirs: string[] = []
  const processes: ApiProcess[] = []
  let metricsPort = 0
  const start = async (name: string, port: number) => {
    const dataDir = await newDataDir('mls-metrics-', { pglite: true })
    dataDirs.push(dataDir)
    const service = await startApiProcess(name, { DATA_DIR: dataDir, METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1', LOG_LEVEL: 'warn' })
    processes.push(service)
    return service
  }
  before(async () => {
    metricsPort = await freePort()
  })
  after(async () => {
    await Promise.all(processes.map((service) => service.stop()))
    for (const dataDir of dataDirs) rmSync(dataDir, { recursive: true, force: true })
  })

  it('serves its metrics there and not on the public port', async () => {
    const api = await start('metrics-api', metricsPort)
    assert.equal((await fetch(`${api.baseUrl}/healthz`)).status, 200)
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
    assert.equal(metrics.status, 200)
    assert.match(await metrics.text(), /http_requests_total\{method="GET",route="\/healthz",status_code="200"\} [1-9]/)
    const hidden = await fetch(`${api.baseUrl}/metrics`)
    assert.equal(hidden.status, 404)
    assert.deepEqual(await hidden.json(), NOT_FOUND)
  })
})
