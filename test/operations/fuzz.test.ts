import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { connect } from 'node:net'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import pino from 'pino'
import { ADMIN_KEY, buildTestApp, type TestApp } from '../helpers/app.js'
import { badRequest, describeRequest, operationsOf, type Fixtures, type FuzzRequest } from '../helpers/bad-requests.js'
import { freshDatabase, newDataDir, serverUrl, type FreshDatabase } from '../helpers/database.js'
import { adminHeaders, createTenant, propertyBody, registrationBody, submitProperty, submitRegistration } from '../helpers/factories.js'
import type { OpenApiDocument } from '../helpers/openapi.js'
import { photo, upload } from '../helpers/photos.js'
import type { StoredImage } from '../helpers/responses.js'
import { startApiProcess, type ApiProcess } from '../helpers/service-process.js'

/**
 * Bad input of every kind, generated from the OpenAPI documents, to every operation: no answer
 * is a 5xx, every refusal is a `{"detail"}` sentence, no connection is reset or left unanswered,
 * nothing is logged as an error, and the service is still ready afterwards. FUZZ_REQUESTS sets
 * how many requests go through `inject` (spread over the operations), FUZZ_SOCKET_REQUESTS how
 * many are written on connections of their own; FUZZ_SEED replays a run: a failure prints its
 * seed and the path to its case.
 */
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 2000)
const SOCKET_REQUESTS = Number(process.env.FUZZ_SOCKET_REQUESTS ?? 150)
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)
/** Long enough for any one exchange on a loaded machine; a connection left open past it is a failure. */
const EXCHANGE_PATIENCE_MS = 20_000
const PINO_ERROR = 50

interface LogLine {
  level: number
  msg: string
  reqId?: string
}

describe('bad input, generated from the OpenAPI documents', () => {
  const errorLines: LogLine[] = []
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const line = JSON.parse(chunk.toString('utf8')) as LogLine
      if (line.level >= PINO_ERROR) errorLines.push(line)
      done()
    },
  })
  const log = pino({ level: 'warn' }, sink)
  let t: TestApp
  let document: OpenApiDocument
  let smallPhoto: Buffer
  let sent = 0
  // The socket-level requests go to the service as a process of its own, as in production: in
  // the test's own process, client and server share one event loop, and the timing that makes
  // a closed connection reset, and lose its answer, does not happen.
  let dataDir: string | undefined
  let serviceDatabase: FreshDatabase | undefined
  let service: Promise<ApiProcess> | undefined

  before(async () => {
    service = (async () => {
      serviceDatabase = serverUrl ? await freshDatabase() : undefined
      dataDir = await newDataDir('mls-fuzz-', { pglite: !serviceDatabase })
      return startApiProcess('fuzzed', {
        DATA_DIR: dataDir,
        ...(serviceDatabase ? { DATABASE_URL: serviceDatabase.url!, DATABASE_POOL_SIZE: '4' } : {}),
        ADMIN_API_KEY: ADMIN_KEY,
        RATE_LIMIT_ENABLED: 'false',
        LOG_LEVEL: 'error',
      })
    })()
    t = await buildTestApp({}, { logger: log })
    t.database.handle.availability.useLogger(log)
    smallPhoto = await photo('jpeg', 32, 32)
    const publicDocument = (await t.app.inject('/openapi.json')).json<OpenApiDocument>()
    const adminDocument = (await t.app.inject({ url: '/admin/openapi.json', headers: adminHeaders })).json<OpenApiDocument>()
    // The operations of both documents, with the schemas of both.
    document = {
      ...publicDocument,
      paths: { ...publicDocument.paths, ...adminDocument.paths },
      components: { ...publicDocument.components, schemas: { ...adminDocument.components.schemas, ...publicDocument.components.schemas } },
    }
  })
  after(async () => {
    await t?.close()
    await (await service?.catch(() => undefined))?.stop()
    await serviceDatabase?.drop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  /**
   * An agency with listings and a photo, and a registration, made anew for each operation: the
   * ones before may have been deleted, decided, suspended or had their keys revoked by the
   * requests to other operations.
   */
  async function freshFixtures(): Promise<Fixtures> {
    const agency = await createTenant(t.app)
    const listings = [await submitProperty(t.app, agency), await submitProperty(t.app, agency)]
    const image = await upload(t.app, agency, { file: smallPhoto, fields: { property_id: String(listings[0]!.id) } })
    assert.equal(image.statusCode, 201, image.body)
    const pending = await submitRegistration(t.app)
    return {
      document,
      pathValues: {
        id: ['1', ...listings.map((listing) => String(listing.id))],
        image_id: [String(image.json<StoredImage>().id)],
        request_code: [pending.request_code],
        tenant_id: [String(agency.tenantId)],
      },
      fieldValues: { email: [pending.email], property_id: listings.map((listing) => String(listing.id)) },
      credentials: { ApiKey: ['x-api-key', agency.apiKey], AdminKey: ['x-admin-key', ADMIN_KEY] },
      photo: smallPhoto,
    }
  }

  /** Sends one request through `inject` and says what is wrong with its answer, if anything. */
  async function check(request: FuzzRequest): Promise<void> {
    sent++
    const response = await t.app.inject(request)
    const where = `${describeRequest(request)}\n→ ${response.statusCode} ${response.body.slice(0, 500)}`
    assert.ok(response.statusCode < 500, `a ${response.statusCode}: ${where}`)
    if (response.statusCode >= 400 && request.method !== 'HEAD') {
      let detail: unknown
      try {
        detail = (JSON.parse(response.body) as { detail?: unknown }).detail
      } catch {
        assert.fail(`an error that is not JSON: ${where}`)
      }
      assert.ok(typeof detail === 'string' && detail.length > 0, `an error without a detail: ${where}`)
    }
  }

  it(`answers ${REQUESTS} generated requests to every operation without a 5xx, each refusal with a detail`, async (context) => {
    const routes = operationsOf(document)
    assert.ok(routes.length >= 30, `only ${routes.length} operations in the documents`)
    const runs = Math.ceil(REQUESTS / routes.length)
    for (const route of routes) {
      await context.test(`${route.method} ${route.path}`, async () => {
        const fixtures = await freshFixtures()
        await fc.assert(
          fc.asyncProperty(badRequest(route, fixtures), (request) => check(request)),
          { numRuns: runs, seed: SEED, includeErrorInReport: true },
        )
      })
    }
  })

  it(`answers ${SOCKET_REQUESTS} requests with lying lengths, broken framing or cut short, over a real connection`, async () => {
    const api = await service!
    const { port } = new URL(api.baseUrl)
    const target = await agencyOf(api.baseUrl)
    await fc.assert(
      fc.asyncProperty(rawExchange(target), async (exchange) => {
        sent++
        const outcome = await exchangeOver(Number(port), exchange)
        const where = `${describeExchange(exchange)}\n→ ${outcome.received.slice(0, 600)}`
        assert.equal(outcome.error, undefined, `the connection failed (${outcome.error}): ${where}`)
        assert.ok(!outcome.timedOut, `no end to the exchange within ${EXCHANGE_PATIENCE_MS} ms: ${where}`)
        const statuses = [...outcome.received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))
        if (exchange.ending !== 'abort') assert.ok(statuses.length > 0, `no answer: ${where}`)
        assert.ok(
          statuses.every((status) => status < 500),
          `a 5xx: ${where}`,
        )
      }),
      { numRuns: SOCKET_REQUESTS, seed: SEED, includeErrorInReport: true },
    )
  })

  it('has logged no error, and is ready and serving afterwards', async (context) => {
    context.diagnostic(`${sent} requests sent`)
    assert.ok(sent >= REQUESTS + SOCKET_REQUESTS, `only ${sent} requests sent`)
    const api = await service!
    for (const [where, ready] of [
      ['the app', await t.app.inject('/readyz')],
      ['the process', await fetch(`${api.baseUrl}/readyz`).then(async (response) => ({ statusCode: response.status, body: await response.text() }))],
    ] as const) {
      assert.equal(ready.statusCode, 200, `${where}: ${ready.body}`)
    }
    const newcomer = await createTenant(t.app)
    const next = await t.app.inject({ method: 'POST', url: '/properties', headers: newcomer.headers, payload: propertyBody() })
    assert.equal(next.statusCode, 201, next.body)
    assert.deepEqual(errorLines, [], `lines at error:\n${errorLines.map((line) => JSON.stringify(line)).join('\n')}`)
    // The process logs at error only: whatever it printed is a failure.
    assert.equal(api.recentOutput(), '', 'the process logged errors')
  })
})

/** An agency of the service process and one of its listings, made over HTTP. */
async function agencyOf(baseUrl: string): Promise<{ apiKey: string; propertyId: number }> {
  const post = async (url: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${baseUrl}${url}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })
    assert.ok(response.ok, `${url}: ${response.status}`)
    return (await response.json()) as Record<string, unknown>
  }
  const registered = await post('/tenants/register', registrationBody())
  const approved = await post(`/admin/registrations/${String(registered.request_code)}/approve`, {}, adminHeaders)
  const apiKey = String(approved.api_key)
  const property = await post('/properties', propertyBody(), { 'x-api-key': apiKey })
  return { apiKey, propertyId: Number(property.id) }
}

/** A request written byte by byte on a socket: how its body is framed, and how the client ends. */
interface RawExchange {
  method: string
  path: string
  headers: string[]
  body: string
  /** How the body's length is declared: truthfully, too long, too short, malformed, chunked. */
  framing: 'exact' | 'declares more' | 'declares less' | 'malformed length' | 'two lengths' | 'chunked' | 'bad chunks' | 'chunked and length' | 'none'
  /** `end`: the client sends all and closes its side; `abort`: it destroys the connection halfway. */
  ending: 'end' | 'abort'
  offBy: number
}

function rawExchange({ apiKey, propertyId: id }: { apiKey: string; propertyId: number }): fc.Arbitrary<RawExchange> {
  return fc
    .record({
      method: fc.constantFrom('POST', 'PATCH', 'PUT', 'GET', 'DELETE'),
      path: fc.constantFrom(
        '/properties',
        `/properties/${id}`,
        `/properties/${id}/status`,
        '/tenants/register',
        '/property-images/upload',
        '/mls/properties',
        '/nowhere',
      ),
      headers: fc.subarray([
        `X-API-Key: ${apiKey}`,
        'Content-Type: application/json',
        'Content-Type: multipart/form-data; boundary=fuzz',
        'Content-Type: multipart/form-data',
        'Connection: keep-alive',
        'Connection: close',
        'Expect: 100-continue',
        'Content-Encoding: gzip',
        'Transfer-Encoding: gzip, chunked',
        // Over Node's 16 KiB of headers: refused while the rest is still arriving.
        `X-Padding: ${'a'.repeat(100_000)}`,
      ]),
      body: fc.oneof(
        fc.constant(JSON.stringify(propertyBody())),
        fc.constantFrom(
          '{"status_id":4}',
          '{',
          '',
          '--fuzz\r\nContent-Disposition: form-data; name="file"; filename="a.jpg"\r\n\r\n\u00ff\u00d8\u00ff',
          'x'.repeat(70_000),
          // Megabytes that are not HTTP, when the length declared is less: refused with most still to come.
          '\u0001'.repeat(3_000_000),
        ),
        fc.string({ maxLength: 200 }),
      ),
      framing: fc.constantFrom(
        'exact',
        'declares more',
        'declares less',
        'malformed length',
        'two lengths',
        'chunked',
        'bad chunks',
        'chunked and length',
        'none',
      ),
      ending: fc.constantFrom('end', 'end', 'end', 'abort'),
      offBy: fc.integer({ min: 1, max: 100_000 }),
    })
    .map((exchange) => Object.defineProperty(exchange, fc.toStringMethod, { value: () => describeExchange(exchange) }))
}

/** The exchange with its long strings cut, for a failure's report. */
function describeExchange(exchange: RawExchange): string {
  return JSON.stringify(exchange, (_key, value: unknown) =>
    typeof value === 'string' && value.length > 200 ? `${value.slice(0, 200)}… (${value.length} characters)` : value,
  )
}

function frame(exchange: RawExchange): Buffer {
  const body = Buffer.from(exchange.body, 'latin1')
  const lines = [`${exchange.method} ${exchange.path} HTTP/1.1`, 'Host: mls.test', ...exchange.headers]
  let payload = body
  switch (exchange.framing) {
    case 'exact':
      lines.push(`Content-Length: ${body.length}`)
      break
    case 'declares more':
      lines.push(`Content-Length: ${body.length + exchange.offBy}`)
      break
    case 'declares less':
      lines.push(`Content-Length: ${Math.max(0, body.length - exchange.offBy)}`)
      break
    case 'malformed length':
      lines.push(`Content-Length: ${['-1', '1e3', `${body.length}x`, ' ', '0x10', '99999999999999999999999'][exchange.offBy % 6]}`)
      break
    case 'two lengths':
      lines.push(`Content-Length: ${body.length}`, `Content-Length: ${body.length + 1}`)
      break
    case 'chunked':
      lines.push('Transfer-Encoding: chunked')
      payload = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')])
      break
    case 'bad chunks':
      lines.push('Transfer-Encoding: chunked')
      payload = Buffer.concat([
        Buffer.from(`${['zz', '-1', 'ffffffffffffffff', `${body.length.toString(16)};${'e'.repeat(20_000)}`][exchange.offBy % 4]}\r\n`),
        body,
      ])
      break
    case 'chunked and length':
      lines.push('Transfer-Encoding: chunked', `Content-Length: ${body.length}`)
      payload = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')])
      break
    case 'none':
      break
  }
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload])
}

interface ExchangeOutcome {
  received: string
  /** The client's socket error, when the service reset the connection or refused a write. */
  error?: string
  timedOut: boolean
}

/**
 * Writes the exchange on a new connection. Ended: everything is sent, the sending side closed,
 * and everything read until the service closes. Aborted: half is sent and the connection destroyed.
 */
async function exchangeOver(port: number, exchange: RawExchange): Promise<ExchangeOutcome> {
  const bytes = frame(exchange)
  const socket = connect(port, '127.0.0.1')
  const chunks: Buffer[] = []
  let error: string | undefined
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  socket.on('error', (failure: NodeJS.ErrnoException) => (error = failure.code ?? failure.message))
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  if (exchange.ending === 'abort') {
    socket.write(bytes.subarray(0, Math.ceil(bytes.length / 2)))
    socket.destroy()
    await closed
    return { received: '', timedOut: false }
  }
  socket.end(bytes)
  let timer: NodeJS.Timeout | undefined
  const timedOut = await Promise.race([
    closed.then(() => false),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), EXCHANGE_PATIENCE_MS))),
  ])
  clearTimeout(timer)
  socket.destroy()
  return { received: Buffer.concat(chunks).toString('latin1'), error, timedOut }
}
