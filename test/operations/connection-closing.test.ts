import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { ADMIN_KEY } from '../helpers/app.js'
import { freshDatabase, newDataDir, serverUrl, type FreshDatabase } from '../helpers/database.js'
import { propertyBody, registrationBody } from '../helpers/factories.js'
import { multipartBody, photo } from '../helpers/photos.js'
import type { ErrorBody } from '../helpers/responses.js'
import { startApiProcess, type ApiProcess } from '../helpers/service-process.js'
import { waitFor } from '../helpers/webhooks.js'

const IMAGE_MAX_BYTES = 1024 * 1024
const ROUNDS = 20

/** fetch() says only "fetch failed"; what happened (EPIPE, ECONNRESET) is on its cause. */
function describeFailure(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause
  return cause ? `${cause.code ?? ''} ${cause.message ?? ''}`.trim() : String(error)
}

/**
 * Every request is answered before its connection closes: bodies refused before they have all
 * arrived (every client reads its 413, none gets a reset connection instead), and requests whose
 * client closed its sending side. The service runs as a process of its own, as in production:
 * in the test's own process, client and server take turns on one event loop, and what loses the
 * answers does not happen.
 */
describe('closing connections', () => {
  let dataDir: string | undefined
  let database: FreshDatabase | undefined
  let service: ApiProcess
  let headers: { 'x-api-key': string }
  let propertyId: number

  before(async () => {
    database = serverUrl ? await freshDatabase() : undefined
    dataDir = await newDataDir('mls-early-answers-', { pglite: !database })
    service = await startApiProcess('early-answers', {
      DATA_DIR: dataDir,
      ...(database ? { DATABASE_URL: database.url!, DATABASE_POOL_SIZE: '4' } : {}),
      ADMIN_API_KEY: ADMIN_KEY,
      RATE_LIMIT_ENABLED: 'false',
      LOG_LEVEL: 'warn',
      IMAGE_MAX_BYTES: String(IMAGE_MAX_BYTES),
    })
    const post = (url: string, body: unknown, extra: Record<string, string> = {}) =>
      fetch(`${service.baseUrl}${url}`, { method: 'POST', headers: { 'content-type': 'application/json', ...extra }, body: JSON.stringify(body) })
    const registered = (await (await post('/tenants/register', registrationBody())).json()) as { request_code: string }
    const approved = (await (await post(`/admin/registrations/${registered.request_code}/approve`, {}, { 'x-admin-key': ADMIN_KEY })).json()) as {
      api_key: string
    }
    headers = { 'x-api-key': approved.api_key }
    propertyId = ((await (await post('/properties', propertyBody(), headers)).json()) as { id: number }).id
  })
  after(async () => {
    await service?.stop()
    await database?.drop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  /** Sends ROUNDS requests one after another; for each, its status and detail, or what went wrong instead. */
  async function outcomesOf(send: () => Promise<Response>): Promise<string[]> {
    const outcomes: string[] = []
    for (let i = 0; i < ROUNDS; i++) {
      try {
        const response = await send()
        outcomes.push(`${response.status} ${((await response.json()) as ErrorBody).detail}`)
      } catch (error) {
        outcomes.push(`no answer: ${describeFailure(error)}`)
      }
    }
    return outcomes
  }

  it(`answers ${ROUNDS} JSON bodies of 2 MB, over the 1 MiB limit, with a 413 each`, async () => {
    const body = JSON.stringify({ ...propertyBody(), description: 'я'.repeat(1024 * 1024) })
    const outcomes = await outcomesOf(() =>
      fetch(`${service.baseUrl}/properties`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body }),
    )
    assert.deepEqual(outcomes, Array<string>(ROUNDS).fill('413 The request body is too large.'))
  })

  it(`answers ${ROUNDS} uploads over IMAGE_MAX_BYTES with a 413 each, whether cut off while read or refused on their length`, async () => {
    const start = await photo('jpeg', 64, 64)
    // 1.5 MiB is read until the limit cuts it off; 3 MiB is refused on its Content-Length.
    const files = [1.5, 3].map((mib) => Buffer.concat([start, Buffer.alloc(mib * 1024 * 1024 - start.length, 1)]))
    let round = 0
    const outcomes = await outcomesOf(() => {
      const form = new FormData()
      form.set('property_id', String(propertyId))
      form.set('file', new Blob([files[round++ % files.length]!], { type: 'image/jpeg' }), 'photo.jpg')
      return fetch(`${service.baseUrl}/property-images/upload`, { method: 'POST', headers, body: form })
    })
    assert.deepEqual(outcomes, Array<string>(ROUNDS).fill('413 The photo is larger than 1 MiB, the most accepted.'))
  })

  it('closes the connection of a client that keeps sending after its answer, having answered it first', async () => {
    const { port } = new URL(service.baseUrl)
    const socket = connect(Number(port), '127.0.0.1')
    let received = ''
    let closed = false
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')))
    socket.on('error', () => {})
    socket.on('close', () => (closed = true))
    socket.write(
      `POST /properties HTTP/1.1\r\nHost: mls.test\r\nX-API-Key: ${headers['x-api-key']}\r\nContent-Type: application/json\r\nContent-Length: ${2 ** 40}\r\n\r\n`,
    )
    await waitFor(() => received.includes('\r\n\r\n{"detail"'), 30_000, 'the answer')
    // Then as much as the connection takes, for as long as it is open: far more than the service reads after its answer.
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    const sendMore = () => {
      while (!socket.destroyed && socket.write(chunk));
    }
    socket.on('drain', sendMore)
    sendMore()
    await waitFor(() => closed, 60_000, 'the service to close the connection')
    assert.match(received, /^HTTP\/1\.1 413 /)
    assert.match(received, /\r\nconnection: close\r\n/i)
    assert.match(received, /\{"detail":"The request body is too large\."\}/)
  })

  it('answers requests whose client closed its sending side once they were sent', async () => {
    const { port } = new URL(service.baseUrl)
    const submission = JSON.stringify(propertyBody())
    // A photo is re-encoded off the event loop, so its answer comes after Node has seen the
    // client's side close, on either database.
    const { payload: form, contentType } = await multipartBody({ file: await photo('jpeg', 64, 64), fields: { property_id: String(propertyId) } })
    const key = headers['x-api-key']
    const requests = [
      Buffer.concat([
        Buffer.from(
          `POST /property-images/upload HTTP/1.1\r\nHost: mls.test\r\nX-API-Key: ${key}\r\nContent-Type: ${contentType}\r\nContent-Length: ${form.length}\r\n\r\n`,
        ),
        form,
      ]),
      Buffer.from(`GET /properties HTTP/1.1\r\nHost: mls.test\r\nX-API-Key: ${key}\r\n\r\n`),
      Buffer.from(
        `POST /properties HTTP/1.1\r\nHost: mls.test\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(submission)}\r\n\r\n${submission}`,
      ),
      Buffer.from('GET /mls/properties?limit=1 HTTP/1.1\r\nHost: mls.test\r\nConnection: keep-alive\r\n\r\n'),
    ]
    for (const request of requests) {
      const socket = connect(Number(port), '127.0.0.1')
      let received = ''
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')))
      const closed = new Promise<void>((resolve, reject) => {
        socket.on('close', () => resolve())
        socket.on('error', reject)
      })
      // The request and the end of the client's side together, as `printf … | nc` sends them.
      socket.end(request)
      await closed
      assert.match(received, /^HTTP\/1\.1 20[01] /, `${request.toString('latin1').split('\r\n')[0]}: ${JSON.stringify(received.slice(0, 300))}`)
    }
  })

  it('answers requests the HTTP parser refuses while more is still arriving, none reset', async () => {
    const { port } = new URL(service.baseUrl)
    const exchange = async (bytes: Buffer) => {
      const socket = connect(Number(port), '127.0.0.1')
      let received = ''
      let failure: string | undefined
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')))
      socket.on('error', (error: NodeJS.ErrnoException) => (failure = error.code))
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
      socket.end(bytes)
      await closed
      return failure ? `reset: ${failure}` : received.split('\r\n')[0]!
    }
    // Headers far over Node's 16 KiB, and 5 MB that is not HTTP after a request: both are refused
    // on their first bytes, with megabytes still to come.
    const hugeHeaders = Buffer.from(`GET /healthz HTTP/1.1\r\nHost: mls.test\r\nX-Padding: ${'a'.repeat(2_000_000)}\r\n\r\n`)
    const garbageAfter = Buffer.concat([Buffer.from('GET /healthz HTTP/1.1\r\nHost: mls.test\r\n\r\n'), Buffer.alloc(5_000_000, 1)])
    // A body longer than its Content-Length, sent to a route that refuses it before reading it
    // (no key): the 401 goes out, then the excess is refused as a request of its own.
    const excess = Buffer.from(`POST /properties HTTP/1.1\r\nHost: mls.test\r\nContent-Length: 65466\r\n\r\n${'x'.repeat(70_000)}`)
    const outcomes: string[] = []
    for (let i = 0; i < 10; i++) outcomes.push(await exchange(hugeHeaders), await exchange(garbageAfter), await exchange(excess))
    const expected = ['HTTP/1.1 431 Request Header Fields Too Large', 'HTTP/1.1 400 Bad Request', 'HTTP/1.1 401 Unauthorized']
    assert.deepEqual(outcomes, Array.from({ length: 10 }, () => expected).flat())
  })
})
