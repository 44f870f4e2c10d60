import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { connect, type AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, propertyBody, registrationBody, submitProperty, type Tenant } from '../helpers/factories.js'
import { photo } from '../helpers/photos.js'
import { waitFor } from '../helpers/webhooks.js'

interface LogLine {
  level: number
  msg: string
  reqId?: string
  [field: string]: unknown
}

const PINO_WARN = 40

/** Clients that go away halfway through sending a body: nothing failed here, so nothing is logged as an error. */
describe('client disconnects', () => {
  const lines: LogLine[] = []
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as LogLine)
      done()
    },
  })
  // Debug, for @fastify/multipart's "starting multipart parsing": the upload's body is being read.
  const log = pino({ level: 'debug' }, sink)
  let t: TestApp
  let port: number
  let agency: Tenant
  let property: Property

  before(async () => {
    t = await buildTestApp({}, { logger: log })
    // A database wrongly taken for unreachable would be logged here, at error.
    t.database.handle.availability.useLogger(log)
    await t.app.listen({ host: '127.0.0.1', port: 0 })
    port = (t.app.server.address() as AddressInfo).port
    agency = await createTenant(t.app)
    property = await submitProperty(t.app, agency)
  })
  after(() => t.close())

  const linesOf = (requestId: string) => lines.filter((line) => line.reqId === requestId)
  const hasLine = (requestId: string, msg: string) => linesOf(requestId).some((line) => line.msg === msg)

  /**
   * Sends the request line, headers and the first half of `body`, waits until the service is
   * reading the request (its log line `readingLine`), then destroys the connection. Resolves
   * with the request's id once the service has logged it abandoned.
   */
  async function abandonMidBody(head: string[], body: Buffer, readingLine: string): Promise<string> {
    const requestId = `abandoned-${randomUUID()}`
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    socket.write(`${[...head, `X-Request-Id: ${requestId}`, `Content-Length: ${body.length}`].join('\r\n')}\r\n\r\n`)
    socket.write(body.subarray(0, body.length / 2))
    await waitFor(() => hasLine(requestId, readingLine), 30_000, `the service to log "${readingLine}"`)
    socket.destroy()
    await waitFor(
      () => hasLine(requestId, 'request abandoned: the client closed the connection before the answer'),
      30_000,
      `the abandoned request to be logged; its lines: ${JSON.stringify(linesOf(requestId))}`,
    )
    return requestId
  }

  it('logs a JSON body cut off halfway at info with the request id, and no error', async () => {
    const publicRoute = await abandonMidBody(
      ['POST /tenants/register HTTP/1.1', 'Host: mls.test', 'Content-Type: application/json'],
      Buffer.from(JSON.stringify(registrationBody())),
      'incoming request',
    )
    const tenantRoute = await abandonMidBody(
      ['POST /properties HTTP/1.1', 'Host: mls.test', 'Content-Type: application/json', `X-API-Key: ${agency.apiKey}`],
      Buffer.from(JSON.stringify(propertyBody())),
      'incoming request',
    )
    for (const requestId of [publicRoute, tenantRoute]) {
      const abandoned = linesOf(requestId).find((line) => line.msg.startsWith('request abandoned'))!
      assert.equal(abandoned.level, 30, JSON.stringify(abandoned))
    }
  })

  it('logs an upload cut off in the middle of its file at info with the request id, and no error', async () => {
    const boundary = 'cut-off-upload'
    const file = await photo('jpeg', 800, 600)
    const form = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="property_id"\r\n\r\n${property.id}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="photo.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
      ),
      file,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ])
    const requestId = await abandonMidBody(
      ['POST /property-images/upload HTTP/1.1', 'Host: mls.test', `Content-Type: multipart/form-data; boundary=${boundary}`, `X-API-Key: ${agency.apiKey}`],
      form,
      'starting multipart parsing',
    )
    assert.equal(linesOf(requestId).find((line) => line.msg.startsWith('request abandoned'))!.level, 30)
  })

  it('has logged nothing at warn or error, and keeps the database taken for reachable', async () => {
    const base = `http://127.0.0.1:${port}`
    const ready = await fetch(`${base}/readyz`)
    assert.equal(ready.status, 200, await ready.text())
    const next = await fetch(`${base}/properties`, {
      method: 'POST',
      headers: { ...agency.headers, 'content-type': 'application/json' },
      body: JSON.stringify(propertyBody()),
    })
    assert.equal(next.status, 201, await next.text())
    const loud = lines.filter((line) => line.level >= PINO_WARN)
    assert.deepEqual(loud, [], `lines at warn or error:\n${loud.map((line) => JSON.stringify(line)).join('\n')}`)
  })
})
