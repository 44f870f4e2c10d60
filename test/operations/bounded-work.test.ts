import assert from 'node:assert/strict'
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect, type AddressInfo, type Socket } from 'node:net'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ADMIN_KEY, buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, propertyBody, registrationBody, submitProperty, type Tenant } from '../helpers/factories.js'
import { multipartBody, photo } from '../helpers/photos.js'
import { startApiProcess, type ApiProcess } from '../helpers/service-process.js'
import { newDataDir } from '../helpers/database.js'
import { waitFor } from '../helpers/webhooks.js'

interface RawExchange {
  socket: Socket
  /** Everything the server sent. */
  received: () => string
  closed: Promise<void>
  isClosed: () => boolean
}

/** A connection that sends `bytes` and then holds, as a slow or stalled client does. */
function openRaw(port: number, bytes: Buffer | string): RawExchange {
  const socket = connect(port, '127.0.0.1')
  const chunks: Buffer[] = []
  let closed = false
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  socket.on('error', () => {})
  const done = new Promise<void>((resolve) =>
    socket.on('close', () => {
      closed = true
      resolve()
    }),
  )
  socket.write(bytes)
  return { socket, received: () => Buffer.concat(chunks).toString('latin1'), closed: done, isClosed: () => closed }
}

async function listen(t: TestApp): Promise<number> {
  await t.app.listen({ host: '127.0.0.1', port: 0 })
  return (t.app.server.address() as AddressInfo).port
}

describe('requests that trickle in', () => {
  let t: TestApp
  let port: number
  before(async () => {
    t = await buildTestApp({ REQUEST_TIMEOUT_MS: '1500' })
    port = await listen(t)
  })
  after(() => t.close())

  it('ends 100 half-sent bodies with a 408 and a closed connection, and keeps answering others', async () => {
    const head = 'POST /tenants/register HTTP/1.1\r\nHost: mls.test\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"company_name": "'
    const stalled = Array.from({ length: 100 }, () => openRaw(port, head))
    // Others are served meanwhile: the stalled connections hold nothing the service needs.
    const health = await fetch(`http://127.0.0.1:${port}/healthz`)
    assert.equal(health.status, 200)
    // REQUEST_TIMEOUT_MS plus Node's one-second check, with room for a busy machine.
    await waitFor(() => stalled.every((exchange) => exchange.isClosed()), 20_000, 'every stalled connection to be closed')
    for (const exchange of stalled) {
      assert.match(exchange.received(), /^HTTP\/1\.1 408 /)
      assert.match(exchange.received(), /"detail":"The request did not arrive in time\."/)
    }
    assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200)
  })

  it('ends headers that never finish the same way', async () => {
    const exchange = openRaw(port, 'GET /healthz HTTP/1.1\r\nHost: mls.test\r\nX-Slow: ')
    await exchange.closed
    assert.match(exchange.received(), /^HTTP\/1\.1 408 /)
  })
})

describe('the photo processing queue', () => {
  let t: TestApp
  let port: number
  let agency: Tenant
  let propertyId: number
  before(async () => {
    // Two places: one photo re-encoded, one waiting.
    t = await buildTestApp({ IMAGE_PROCESSING_CONCURRENCY: '1', IMAGE_QUEUE_MAX: '1' })
    port = await listen(t)
    agency = await createTenant(t.app)
    propertyId = (await submitProperty(t.app, agency)).id
  })
  after(() => t.close())

  const mediaFiles = () => {
    try {
      return readdirSync(path.join(t.config.dataDir, 'media', 'photos')).length
    } catch {
      return 0
    }
  }
  const storedImages = async () => (await t.app.services.images.list(agency.tenantId, propertyId)).length

  /** An upload whose headers and first bytes are sent; `finish` sends the rest. */
  async function startUpload(file: Buffer) {
    const { payload, contentType } = await multipartBody({ file, fields: { property_id: String(propertyId) } })
    const head = Buffer.from(
      `POST /property-images/upload HTTP/1.1\r\nHost: mls.test\r\nX-API-Key: ${agency.apiKey}\r\nContent-Type: ${contentType}\r\nContent-Length: ${payload.length}\r\n\r\n`,
    )
    const split = Math.floor(payload.length / 2)
    const exchange = openRaw(port, Buffer.concat([head, payload.subarray(0, split)]))
    return {
      ...exchange,
      finish: () => {
        exchange.socket.write(payload.subarray(split))
      },
    }
  }

  it('refuses a photo with 503 and Retry-After while every place is taken, storing nothing; takes it once one is free', async () => {
    const file = await photo('jpeg', 800, 600)
    const first = await startUpload(file)
    const second = await startUpload(file)
    await waitFor(() => t.app.services.images.processingLoad().admitted === 2, 20_000, 'both uploads to hold their places')
    const [rowsBefore, filesBefore] = [await storedImages(), mediaFiles()]

    const { payload, contentType } = await multipartBody({ file, fields: { property_id: String(propertyId) } })
    const refused = await fetch(`http://127.0.0.1:${port}/property-images/upload`, {
      method: 'POST',
      headers: { 'x-api-key': agency.apiKey, 'content-type': contentType },
      body: payload,
    })
    assert.equal(refused.status, 503)
    assert.equal(refused.headers.get('retry-after'), '2')
    assert.deepEqual(await refused.json(), { detail: 'Too many photos are being processed right now; retry shortly.' })
    assert.equal(await storedImages(), rowsBefore)
    assert.equal(mediaFiles(), filesBefore)

    first.finish()
    second.finish()
    await waitFor(() => /^HTTP\/1\.1 201 /.test(first.received()) && /^HTTP\/1\.1 201 /.test(second.received()), 20_000, 'both uploads to be stored')
    first.socket.destroy()
    second.socket.destroy()
    await waitFor(() => t.app.services.images.processingLoad().admitted === 0, 20_000, 'the places to be given back')

    const accepted = await fetch(`http://127.0.0.1:${port}/property-images/upload`, {
      method: 'POST',
      headers: { 'x-api-key': agency.apiKey, 'content-type': contentType },
      body: payload,
    })
    assert.equal(accepted.status, 201)
    assert.equal(await storedImages(), rowsBefore + 3)
    assert.equal(mediaFiles(), filesBefore + 6) // each photo and its thumbnail
  })
})

/** Peak and current resident memory of a process, in MiB, from /proc. */
function memoryOf(pid: number): { peakMiB: number; currentMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  return { peakMiB: kib('VmHWM') / 1024, currentMiB: kib('VmRSS') / 1024 }
}

describe('a burst of large uploads, on the service as a process of its own', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  // The bound docs/operations.md states for 2 places (IMAGE_PROCESSING_CONCURRENCY=1, IMAGE_QUEUE_MAX=1)
  // and IMAGE_MAX_BYTES of 15 MiB: each place holds a photo's bytes about twice while it is read
  // (its chunks, then one buffer) plus libvips' working set while it is re-encoded.
  const BOUND_MIB = 300
  let dataDir = ''
  let service: ApiProcess | undefined
  let base = ''

  before(async () => {
    dataDir = await newDataDir('mls-burst-', { pglite: true })
    service = await startApiProcess('burst', {
      DATA_DIR: dataDir,
      ADMIN_API_KEY: ADMIN_KEY,
      RATE_LIMIT_ENABLED: 'false',
      LOG_LEVEL: 'warn',
      IMAGE_PROCESSING_CONCURRENCY: '1',
      IMAGE_QUEUE_MAX: '1',
    })
    base = service.baseUrl
  })
  after(async () => {
    await service?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('answers 30 uploads of 14 MiB with 201 or 503, its memory bounded, leaving nothing behind', async (context) => {
    const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
    const registered = (await (await post('/tenants/register', registrationBody())).json()) as { request_code: string }
    const approved = (await (await post(`/admin/registrations/${registered.request_code}/approve`, {}, { 'x-admin-key': ADMIN_KEY })).json()) as {
      api_key: string
    }
    const headers = { 'x-api-key': approved.api_key }
    const property = (await (await post('/properties', propertyBody(), headers)).json()) as { id: number }

    const file = await photo('jpeg', 5000, 3500) // about 14 MiB, just under IMAGE_MAX_BYTES
    const { payload, contentType } = await multipartBody({ file, fields: { property_id: String(property.id) } })
    // The peak so far is start-up's: reset it, so that VmHWM is the burst's own.
    writeFileSync(`/proc/${service!.pid}/clear_refs`, '5')
    const before = memoryOf(service!.pid)
    const statuses = await Promise.all(
      Array.from({ length: 30 }, () =>
        fetch(`${base}/property-images/upload`, { method: 'POST', headers: { ...headers, 'content-type': contentType }, body: payload }).then(
          async (response) => (await response.arrayBuffer(), response.status),
        ),
      ),
    )
    const after = memoryOf(service!.pid)
    assert.ok(
      statuses.every((status) => status === 201 || status === 503),
      `every answer is 201 or 503: ${statuses.join(', ')}`,
    )
    const stored = statuses.filter((status) => status === 201).length
    assert.ok(stored >= 1, 'the queue takes photos while refusing the rest')
    const images = (await (await fetch(`${base}/property-images?property_id=${property.id}`, { headers })).json()) as unknown[]
    assert.equal(images.length, stored)
    assert.equal(readdirSync(path.join(dataDir, 'media', 'photos')).length, 2 * stored, 'no file without its row')
    const growth = after.peakMiB - before.currentMiB
    context.diagnostic(
      `30 uploads of 14 MiB: ${stored} stored, ${30 - stored} refused; RSS peak ${after.peakMiB.toFixed(0)} MiB, ${growth.toFixed(0)} MiB over ${before.currentMiB.toFixed(0)} before`,
    )
    assert.ok(growth < BOUND_MIB, `RSS grew by ${growth.toFixed(0)} MiB, over ${BOUND_MIB} MiB`)
  })
})
