import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'drizzle-orm'
import pino from 'pino'
import { queryRows } from '../../src/db/client.js'
import { orphanFilesJob } from '../../src/modules/images/orphan-files.job.js'
import { mediaRoot } from '../../src/modules/images/storage.js'
import { Worker } from '../../src/worker/worker.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js'
import { createFeed, feedXml, runFeedNow } from '../helpers/feeds.js'
import { jobContext } from '../helpers/jobs.js'
import { photo, upload } from '../helpers/photos.js'
import type { ErrorBody, StoredImage } from '../helpers/responses.js'
import { waitFor } from '../helpers/webhooks.js'

/**
 * How the service survives its photo storage failing: a local DATA_DIR/media that cannot be
 * written, an S3-compatible endpoint that answers errors or stalls. The project's rule: "the
 * service answers 503 or 4xx with a {detail}, recovers by itself, and loses nothing
 * acknowledged. No process exits because a dependency blinked."
 */

/**
 * What a caller waits, at most, for an answer while storage stalls: well past the service's own
 * bound on an S3 request (two attempts of 10 s), and far short of forever.
 */
const STALL_PATIENCE_MS = 45_000
/** What src/worker/main.ts gives the worker to stop before the process is ended (closeWithGrace's delay). */
const WORKER_STOP_GRACE_MS = 15_000

const TIMED_OUT = Symbol('timed out')

/** `promise`'s value, or TIMED_OUT once `ms` have passed first. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  const timer = new AbortController()
  try {
    return await Promise.race([promise, sleep(ms, TIMED_OUT, { signal: timer.signal })])
  } finally {
    timer.abort()
  }
}

type Behaviour = 'ok' | 'error' | 'stall'

/**
 * A tiny S3-compatible endpoint that stores PUTs in memory and can, per kind of request
 * (PutObject, DeleteObject, ListObjects), answer 500 or never answer at all: the request is
 * held open, as a store that hangs (or a network that drops packets) holds it.
 */
class FakeS3 {
  readonly objects = new Map<string, Buffer>()
  readonly behaviour: Record<'put' | 'delete' | 'list', Behaviour> = { put: 'ok', delete: 'ok', list: 'ok' }
  /** Requests received and held unanswered, by kind. */
  readonly stalled = { put: 0, delete: 0, list: 0 }
  private server!: Server
  endpoint = ''

  async start(): Promise<void> {
    this.server = createServer((request, response) => this.handle(request, response))
    this.server.listen(0, '127.0.0.1')
    await once(this.server, 'listening')
    this.endpoint = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  stop(): void {
    this.server.closeAllConnections()
    this.server.close()
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://s3')
      const kind = request.method === 'PUT' ? 'put' : request.method === 'DELETE' ? 'delete' : 'list'
      const behaviour = this.behaviour[kind]
      if (behaviour === 'stall') {
        this.stalled[kind]++
        return
      }
      if (behaviour === 'error') {
        response.writeHead(500, { 'content-type': 'application/xml' })
        response.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>')
        return
      }
      const key = decodeURIComponent(url.pathname.split('/').slice(2).join('/'))
      if (kind === 'put') {
        this.objects.set(key, Buffer.concat(chunks))
        response.writeHead(200, { etag: '"stored"' }).end()
      } else if (kind === 'delete') {
        this.objects.delete(key)
        response.writeHead(204).end()
      } else {
        const contents = [...this.objects.keys()]
          .sort()
          .map((stored) => `<Contents><Key>${stored}</Key><LastModified>${new Date().toISOString()}</LastModified><Size>1</Size></Contents>`)
        response.writeHead(200, { 'content-type': 'application/xml' })
        response.end(
          `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>mls-photos</Name><Prefix></Prefix><IsTruncated>false</IsTruncated>${contents.join('')}</ListBucketResult>`,
        )
      }
    })
  }
}

function s3Env(s3: FakeS3, extra: Record<string, string> = {}): Record<string, string> {
  return {
    STORAGE_DRIVER: 's3',
    S3_BUCKET: 'mls-photos',
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: 'us-east-1',
    S3_ACCESS_KEY_ID: 'key',
    S3_SECRET_ACCESS_KEY: 'secret',
    S3_PUBLIC_URL: `${s3.endpoint}/mls-photos`,
    ...extra,
  }
}

async function photoRows(t: TestApp, propertyId: number): Promise<number> {
  return (await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from property_images where property_id = ${propertyId}`))[0]!.n
}

/**
 * The service on a FakeS3 of its own, with an agency, for the describe that calls it (its
 * before and after hooks); `extra` settings beside the S3 ones.
 */
function onFakeS3(extra: Record<string, string> = {}) {
  const on = { s3: new FakeS3(), t: undefined as unknown as TestApp, agency: undefined as unknown as Tenant }
  before(async () => {
    await on.s3.start()
    on.t = await buildTestApp(s3Env(on.s3, extra))
    on.agency = await createTenant(on.t.app)
  })
  after(async () => {
    on.s3.stop()
    await on.t.close()
  })
  return on
}

describe('an upload while S3 answers 500', () => {
  const on = onFakeS3()

  it('is a 503 with a detail and Retry-After, storing no row, and uploads succeed once S3 answers again', async () => {
    const propertyId = (await submitProperty(on.t.app, on.agency)).id
    on.s3.behaviour.put = 'error'
    const refused = await upload(on.t.app, on.agency, { file: await photo('jpeg', 64, 48), fields: { property_id: String(propertyId) } })
    assert.equal(refused.headers['content-type'], 'application/json; charset=utf-8')
    assert.equal(typeof refused.json<ErrorBody>().detail, 'string')
    assert.equal(refused.statusCode, 503, `a storage outage is a dependency that blinked, not a bug: ${refused.body}`)
    assert.ok(refused.headers['retry-after'], 'a 503 says when to retry')
    assert.equal(await photoRows(on.t, propertyId), 0)

    on.s3.behaviour.put = 'ok'
    const stored = await upload(on.t.app, on.agency, { file: await photo('jpeg', 64, 48), fields: { property_id: String(propertyId) } })
    assert.equal(stored.statusCode, 201, stored.body)
  })
})

describe('an upload while S3 stalls', () => {
  // One place for photos (one processed, none waiting), so a photo that never leaves shows at once.
  const on = onFakeS3({ IMAGE_PROCESSING_CONCURRENCY: '1', IMAGE_QUEUE_MAX: '0' })

  it('is answered in bounded time, 201 or 503, and gives its place back so uploads succeed once S3 answers', async () => {
    const propertyId = (await submitProperty(on.t.app, on.agency)).id
    const file = await photo('jpeg', 64, 48)
    on.s3.behaviour.put = 'stall'
    const stalled = upload(on.t.app, on.agency, { file, fields: { property_id: String(propertyId) } })
    await waitFor(() => on.s3.stalled.put > 0, 20_000, 'the upload to reach S3')

    // S3 answers new requests again; the one it swallowed stays unanswered, as a dropped connection's would.
    on.s3.behaviour.put = 'ok'
    const answer = await within(stalled, STALL_PATIENCE_MS)
    assert.notEqual(answer, TIMED_OUT, `an upload whose storage write stalls is still unanswered after ${STALL_PATIENCE_MS} ms`)
    if (answer === TIMED_OUT) return
    // The request to S3 is given up and made again, which S3, back, may now take.
    assert.ok([201, 503].includes(answer.statusCode), answer.body)
    if (answer.statusCode === 503) assert.equal(typeof answer.json<ErrorBody>().detail, 'string')

    const next = await upload(on.t.app, on.agency, { file, fields: { property_id: String(propertyId) } })
    assert.equal(next.statusCode, 201, `with S3 back, uploads succeed again: ${next.body}`)
  })
})

describe('a photo deleted while S3 stalls its deletes', () => {
  const on = onFakeS3()

  it('is answered 204 in bounded time: the deletion has committed, and its files are the orphan sweep’s', async () => {
    const propertyId = (await submitProperty(on.t.app, on.agency)).id
    const created = await upload(on.t.app, on.agency, { file: await photo('jpeg', 64, 48), fields: { property_id: String(propertyId) } })
    assert.equal(created.statusCode, 201, created.body)
    const image = created.json<StoredImage>()

    on.s3.behaviour.delete = 'stall'
    const deletion = on.t.app.inject({ method: 'DELETE', url: `/property-images/${image.id}`, headers: on.agency.headers })
    const answer = await within(deletion, STALL_PATIENCE_MS)
    assert.notEqual(answer, TIMED_OUT, `DELETE of a photo is still unanswered after ${STALL_PATIENCE_MS} ms while S3 holds its DeleteObject`)
    if (answer === TIMED_OUT) return
    assert.equal(answer.statusCode, 204, answer.body)
    assert.equal(await photoRows(on.t, propertyId), 0)
  })
})

describe('the worker while S3 stalls the orphan sweep’s listing', () => {
  const on = onFakeS3()

  it('stops within the grace the worker process gives it, instead of waiting for the listing forever', async () => {
    on.s3.behaviour.list = 'stall'
    const worker = new Worker({ services: on.t.app.services, config: on.t.config, log: pino({ level: 'silent' }) }, [orphanFilesJob])
    worker.start()
    await waitFor(() => on.s3.stalled.list > 0, 20_000, 'the sweep to list the bucket')
    const stopped = await within(
      worker.stop().then(() => 'stopped' as const),
      WORKER_STOP_GRACE_MS,
    )
    assert.equal(stopped, 'stopped', `the worker had not stopped ${WORKER_STOP_GRACE_MS} ms after being asked (src/worker/main.ts then ends the process)`)
  })
})

describe('an upload while DATA_DIR/media cannot be written', () => {
  let t: TestApp
  let agency: Tenant

  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app)
  })
  after(() => t.close())

  it('is a 503 with a detail and Retry-After, storing no row, and uploads succeed once the folder is writable again', async () => {
    const propertyId = (await submitProperty(t.app, agency)).id
    // The folder photos go in cannot be made (tests run as root, so permissions would not stop
    // a write): as a full or read-only disk, every write fails.
    const photos = path.join(mediaRoot(t.config), 'photos')
    rmSync(photos, { recursive: true, force: true })
    writeFileSync(photos, 'not a folder')
    const refused = await upload(t.app, agency, { file: await photo('jpeg', 64, 48), fields: { property_id: String(propertyId) } })
    assert.equal(refused.headers['content-type'], 'application/json; charset=utf-8')
    assert.equal(typeof refused.json<ErrorBody>().detail, 'string')
    assert.equal(refused.statusCode, 503, `a storage outage is a dependency that blinked, not a bug: ${refused.body}`)
    assert.ok(refused.headers['retry-after'], 'a 503 says when to retry')
    assert.equal(await photoRows(t, propertyId), 0)

    rmSync(photos)
    mkdirSync(photos)
    const stored = await upload(t.app, agency, { file: await photo('jpeg', 64, 48), fields: { property_id: String(propertyId) } })
    assert.equal(stored.statusCode, 201, stored.body)
  })
})

describe('a feed run while DATA_DIR/media cannot be written', () => {
  let t: TestApp
  let server: FeedServer
  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true' })
    server = await startFeedServer()
  })
  after(async () => {
    await t.close()
    await server.close()
  })

  it('fails with the storage’s own words, not as a photo waiting behind other listings’, and runs again once it is writable', async () => {
    const agency = await createTenant(t.app)
    server.serve('/down/photo.jpg', { body: await photo('jpeg', 120, 90), contentType: 'image/jpeg' })
    server.serve('/down.xml', { body: feedXml([{ id: 'sd-1', price: 5_000_000, images: [server.url('/down/photo.jpg')] }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/down.xml') })
    const photos = path.join(mediaRoot(t.config), 'photos')
    rmSync(photos, { recursive: true, force: true })
    writeFileSync(photos, 'not a folder')
    const failed = await runFeedNow(t.app, jobContext(t), agency, feed.id)
    assert.equal(`${failed.status} ${failed.failure_code}`, 'failed internal_error')
    assert.match(failed.detail!, /The photo storage cannot take the photo right now/)

    rmSync(photos)
    mkdirSync(photos)
    const next = await runFeedNow(t.app, jobContext(t), agency, feed.id)
    assert.equal(next.status, 'succeeded', JSON.stringify(next))
  })
})
