import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import S3rver from 's3rver'
import { createLogger } from '../../src/lib/log.js'
import { orphanFilesJob } from '../../src/modules/images/orphan-files.job.js'
import { Worker } from '../../src/worker/worker.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { codeRoot, nodeArguments } from '../helpers/code-tree.js'
import { createTenant, propertyBody, type Tenant } from '../helpers/factories.js'
import type { LogLine } from '../helpers/jobs.js'
import { hasRedisServer, startOwnRedis, stopOwnRedis } from '../helpers/own-redis.js'
import { freePort } from '../helpers/service-process.js'
import { waitFor } from '../helpers/webhooks.js'

/**
 * What the service writes to its logs, read as an operator's log collector reads it: the
 * service's own logger (createLogger, with its serializers, as src/runtime.ts builds it), its
 * lines captured. Logs must never carry a credential that lets their reader act as someone else.
 */
function capturingLogger(level = 'info') {
  const raw: string[] = []
  const log = createLogger({ level }, { write: (line: string) => void raw.push(line) })
  return { log, raw, lines: () => raw.map((line) => JSON.parse(line) as LogLine) }
}

describe('the log of a registration lookup', () => {
  let t: TestApp
  const { log, raw } = capturingLogger()
  before(async () => {
    t = await buildTestApp({}, { logger: log })
  })
  after(() => t.close())

  it('leaves out the code and e-mail of a browser’s CORS preflight for the lookup too', async () => {
    const agency = await createTenant(t.app, { email: 'preflight@agency.example' })
    raw.length = 0
    const url = `/tenants/register/${agency.requestCode}?email=${encodeURIComponent(agency.email)}`
    // A portal's page that tags its calls with X-Request-Id (an allowed header, docs/api.md)
    // makes the browser ask first, with the very URL of the lookup.
    const preflight = await t.app.inject({
      method: 'OPTIONS',
      url,
      headers: { origin: 'https://portal.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-request-id' },
    })
    assert.equal(preflight.statusCode, 204)
    const lookup = await t.app.inject({ url, headers: { origin: 'https://portal.example', 'x-request-id': 'portal-lookup-1' } })
    assert.equal(lookup.json<{ api_key?: string }>().api_key, agency.apiKey, 'the code with the e-mail reads back the agency’s key')
    assert.deepEqual(
      raw.filter((line) => line.includes(agency.requestCode) || line.includes('preflight%40agency') || line.includes('preflight@agency')),
      [],
      'a reader of the log could read the agency’s API key with what it shows',
    )
  })
})

describe('the log of an authenticated request', () => {
  let t: TestApp
  let agency: Tenant
  const { log, raw, lines } = capturingLogger()
  before(async () => {
    t = await buildTestApp({}, { logger: log })
    agency = await createTenant(t.app)
  })
  after(() => t.close())

  it('carries the agency’s tenantId on every line after authentication, "request completed" included', async () => {
    raw.length = 0
    const rejected = await t.app.inject({ method: 'POST', url: '/properties', headers: agency.headers, payload: { ...propertyBody(), price: -1 } })
    assert.equal(rejected.statusCode, 422)
    const created = await t.app.inject({ method: 'POST', url: '/properties', headers: agency.headers, payload: propertyBody() })
    assert.equal(created.statusCode, 201)
    for (const response of [rejected, created]) {
      const requestId = response.headers['x-request-id']
      const after = lines().filter((line) => line.reqId === requestId && line.msg !== 'incoming request')
      assert.ok(after.some((line) => line.msg === 'request completed'))
      assert.deepEqual(
        after.filter((line) => line.tenantId !== agency.tenantId).map((line) => line.msg),
        [],
        `docs/operations.md#logs: once authenticated, a request's lines carry the agency's tenantId (${response.statusCode})`,
      )
    }
  })
})

describe('the log of an answer written before the request could be read', () => {
  let t: TestApp
  const { log, lines } = capturingLogger('trace')
  before(async () => {
    t = await buildTestApp({}, { logger: log })
    await t.app.listen({ host: '127.0.0.1', port: 0 })
  })
  after(() => t.close())

  it('carries the X-Request-Id the 431 answer gives, with its status and detail', async () => {
    const { port } = t.app.server.address() as AddressInfo
    const socket = connect(port, '127.0.0.1')
    await once(socket, 'connect')
    let answer = ''
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')))
    socket.write(`GET /healthz HTTP/1.1\r\nHost: mls.test\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`)
    await once(socket, 'close')
    assert.match(answer, /^HTTP\/1\.1 431 /)
    const requestId = /\r\nX-Request-Id: ([^\r]+)\r\n/i.exec(answer)?.[1]
    assert.ok(requestId, 'the answer carries an id of its own')
    // docs/api.md: every answer carries X-Request-Id, "which the logs carry too";
    // docs/operations.md: 4xx answers are logged at info with the detail sent.
    await waitFor(() => lines().some((line) => JSON.stringify(line).includes(requestId)), 2000, `a log line with the 431's request id ${requestId}`)
  })
})

describe('the log of a Redis that refuses the configured password', { skip: hasRedisServer() ? false : 'needs redis-server' }, () => {
  const configured = 'Redis-Passw0rd-From-REDIS_URL'
  let redis: ChildProcess
  let t: TestApp
  const { log, raw } = capturingLogger()
  before(async () => {
    const port = await freePort()
    // The password was rotated on the server; the process still has the one in REDIS_URL.
    redis = await startOwnRedis(port, 'the-rotated-password-0123')
    t = await buildTestApp({ RATE_LIMIT_ENABLED: 'true', REDIS_URL: `redis://:${configured}@127.0.0.1:${port}` }, { logger: log })
  })
  after(async () => {
    await t.close()
    await stopOwnRedis(redis)
  })

  it('says that Redis is unavailable without writing the password of REDIS_URL', async () => {
    assert.equal((await t.app.inject('/mls/properties')).statusCode, 200, 'requests go on uncounted')
    await waitFor(() => raw.some((line) => line.includes('redis for rate limits is unavailable')), 5000, 'the outage line')
    assert.deepEqual(
      raw.filter((line) => line.includes(configured)),
      [],
      'docs/operations.md: a configuration error never shows an address’s password; the log must not either',
    )
  })
})

describe('the log of an S3 store that refuses the configured credentials', () => {
  const accessKeyId = 'AKIAOPENMLSLOGTEST1'
  let directory: string
  let s3: S3rver
  let t: TestApp
  const { log, raw } = capturingLogger()
  before(async () => {
    directory = mkdtempSync(path.join(tmpdir(), 'mls-s3-'))
    s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: 'mls-photos', configs: [] }] })
    const { port } = await s3.run()
    const endpoint = `http://127.0.0.1:${port}`
    t = await buildTestApp(
      {
        STORAGE_DRIVER: 's3',
        S3_BUCKET: 'mls-photos',
        S3_ENDPOINT: endpoint,
        S3_REGION: 'us-east-1',
        // A key the store does not know (revoked, or set for another account).
        S3_ACCESS_KEY_ID: accessKeyId,
        S3_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYLOGTESTKEY',
        S3_PUBLIC_URL: `${endpoint}/mls-photos`,
      },
      { logger: log },
    )
  })
  after(async () => {
    await t.close()
    await s3.close()
    rmSync(directory, { recursive: true, force: true })
  })

  it('logs the worker’s failed orphan sweep without S3_ACCESS_KEY_ID, a secret the configuration never shows', async () => {
    const worker = new Worker({ services: t.app.services, config: t.config, log }, [orphanFilesJob])
    worker.start()
    try {
      await waitFor(() => raw.some((line) => line.includes('job failed')), 20_000, 'the sweep’s failure to be logged')
    } finally {
      await worker.stop()
    }
    assert.deepEqual(
      raw.filter((line) => line.includes(accessKeyId)).map((line) => (JSON.parse(line) as LogLine).msg),
      [],
    )
  })
})

describe('a process started with a DATABASE_URL that is not a postgres:// URL', () => {
  it('prints its one line without the password the URL carries in its query', async () => {
    const password = 'Sup3r-Secret-Db-Passw0rd'
    // libpq and node-postgres read `?password=`; the scheme is misspelt.
    const child = spawn(process.execPath, [...nodeArguments('src/server'), '--no-worker'], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        DATABASE_URL: `postgress://mls@db.internal:5432/mls?password=${password}`,
        SECRET_KEY: 'a-secret-key-that-is-long-enough-0123456789',
        METRICS_PORT: '0',
        PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: codeRoot,
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    const [code] = (await once(child, 'exit')) as [number | null]
    assert.equal(code, 1, output)
    assert.match(output, /DATABASE_URL/, 'the line names the variable')
    assert.ok(!output.includes(password), `the process printed the database password: ${output.trim()}`)
  })
})
