import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { gzipSync } from 'node:zlib'
import { OutboundClient } from '../../src/lib/outbound-http.js'
import { downloadFeed, FeedRunFailure, type FeedDownload } from '../../src/modules/feeds/feed-download.js'
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js'

const LIMITS = { maxBytes: 64 * 1024, timeoutMs: 5_000, httpsOnly: false }
const NOTHING_KNOWN = { etag: null, lastModified: null, contentDigest: null }
const sha256 = (text: string | Buffer) => createHash('sha256').update(text).digest('hex')

async function contents(download: FeedDownload): Promise<string> {
  assert.ok(download.changed)
  const chunks: Buffer[] = []
  for await (const chunk of download.read()) chunks.push(chunk)
  return Buffer.concat(chunks).toString('utf8')
}

async function failure(promise: Promise<unknown>): Promise<FeedRunFailure> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof FeedRunFailure, String(error))
    return error
  }
  assert.fail('the download succeeded')
}

describe('downloading a feed', () => {
  let server: FeedServer
  const open = new OutboundClient({ allowPrivateNetwork: true })
  const guarded = new OutboundClient({ allowPrivateNetwork: false })

  before(async () => {
    server = await startFeedServer()
  })
  after(async () => {
    await server.close()
    await open.close()
    await guarded.close()
  })

  it('writes the body to a temporary file, with its sha256 and validators, read as often as needed and removed by discard', async () => {
    const body = `<realty-feed>${'<offer internal-id="1"/>'.repeat(500)}</realty-feed>`
    server.serve('/plain.xml', { body, etag: '"v1"', lastModified: 'Wed, 25 Nov 2026 10:00:00 GMT' })
    const download = await downloadFeed(open, server.url('/plain.xml'), NOTHING_KNOWN, LIMITS)
    assert.ok(download.changed)
    assert.equal(download.digest, sha256(body))
    assert.equal(download.bytes, Buffer.byteLength(body))
    assert.equal(download.etag, '"v1"')
    assert.equal(download.lastModified, 'Wed, 25 Nov 2026 10:00:00 GMT')
    assert.equal(await contents(download), body)
    assert.equal(await contents(download), body)
    await download.discard()
    assert.equal(existsSync(download.file), false)
  })

  it('asks for gzip and decodes it; the digest is of the decoded file', async () => {
    const body = `<realty-feed>${'<offer internal-id="2"><description>текст</description></offer>'.repeat(300)}</realty-feed>`
    server.serve('/gzipped.xml', { body, gzip: true })
    const download = await downloadFeed(open, server.url('/gzipped.xml'), NOTHING_KNOWN, LIMITS)
    assert.equal(server.requests.at(-1)!.headers['accept-encoding'], 'gzip')
    assert.equal(await contents(download), body)
    assert.ok(download.changed && download.digest === sha256(body))
    await download.discard()
  })

  it('sends the validators of the imported file back, and a 304 is no change', async () => {
    server.serve('/validated.xml', { body: '<realty-feed/>', etag: '"v7"' })
    const known = { etag: '"v7"', lastModified: 'Wed, 25 Nov 2026 10:00:00 GMT', contentDigest: sha256('<realty-feed/>') }
    const download = await downloadFeed(open, server.url('/validated.xml'), known, LIMITS)
    assert.deepEqual(download, { changed: false })
    const request = server.requests.at(-1)!
    assert.equal(request.headers['if-none-match'], '"v7"')
    assert.equal(request.headers['if-modified-since'], 'Wed, 25 Nov 2026 10:00:00 GMT')
  })

  it('calls the same bytes as the last imported file no change, even without validators', async () => {
    server.serve('/same.xml', { body: '<realty-feed></realty-feed>' })
    const download = await downloadFeed(open, server.url('/same.xml'), { ...NOTHING_KNOWN, contentDigest: sha256('<realty-feed></realty-feed>') }, LIMITS)
    assert.deepEqual(download, { changed: false })
  })

  it('fails past the byte cap, counted as sent and once decoded (a small gzip that unpacks huge)', async () => {
    server.serve('/large.xml', { body: 'x'.repeat(LIMITS.maxBytes + 1) })
    const large = await failure(downloadFeed(open, server.url('/large.xml'), NOTHING_KNOWN, LIMITS))
    assert.equal(large.code, 'too_large')
    assert.match(large.message, /^The feed could not be downloaded: /)

    // Sent without a length, in chunks: the cap is found while reading.
    server.serve('/streamed.xml', {
      body: async function* () {
        for (let i = 0; i < 100; i++) yield 'y'.repeat(1024)
      },
    })
    assert.equal((await failure(downloadFeed(open, server.url('/streamed.xml'), NOTHING_KNOWN, LIMITS))).code, 'too_large')

    // A gzip of a few hundred bytes that decodes to ten times the cap.
    server.serve('/bomb.xml', { body: Buffer.alloc(10 * LIMITS.maxBytes, 'z'), gzip: true })
    assert.equal((await failure(downloadFeed(open, server.url('/bomb.xml'), NOTHING_KNOWN, LIMITS))).code, 'too_large')
    assert.ok(gzipSync(Buffer.alloc(10 * LIMITS.maxBytes, 'z')).length < LIMITS.maxBytes)
  })

  it('follows no redirect from https down to plain http when the feed must be https', async () => {
    // The local server is plain http: a redirect to it is the downgrade (an https feed's first hop is checked when it is saved).
    server.serve('/moved.xml', { body: '', status: 302, headers: { location: server.url('/plain.xml') } })
    const refused = await failure(downloadFeed(open, server.url('/moved.xml'), NOTHING_KNOWN, { ...LIMITS, httpsOnly: true }))
    assert.equal(refused.code, 'download_failed')
    assert.match(refused.message, /^The feed could not be downloaded: a redirect led to http:\/\/127\.0\.0\.1, which is not https\.$/)
    const followed = await downloadFeed(open, server.url('/moved.xml'), NOTHING_KNOWN, LIMITS)
    assert.ok(followed.changed)
    await followed.discard()
  })

  it('fails on an answer that is not 2xx, a connection cut mid-file, an unreachable host, and a time limit', async () => {
    server.serve('/missing.xml', { body: 'gone', status: 410 })
    const status = await failure(downloadFeed(open, server.url('/missing.xml'), NOTHING_KNOWN, LIMITS))
    assert.equal(status.code, 'http_status')
    assert.match(status.message, /HTTP 410/)

    server.serve('/cut.xml', { body: `<realty-feed>${'<offer/>'.repeat(2000)}</realty-feed>`, cutAfterBytes: 4000 })
    assert.equal((await failure(downloadFeed(open, server.url('/cut.xml'), NOTHING_KNOWN, LIMITS))).code, 'download_failed')

    assert.equal((await failure(downloadFeed(open, 'http://127.0.0.1:9/feed.xml', NOTHING_KNOWN, LIMITS))).code, 'download_failed')

    server.serve('/slow.xml', {
      body: async function* () {
        yield '<realty-feed>'
        await new Promise((resolve) => setTimeout(resolve, 5_000))
        yield '</realty-feed>'
      },
    })
    const slow = await failure(downloadFeed(open, server.url('/slow.xml'), NOTHING_KNOWN, { ...LIMITS, timeoutMs: 300 }))
    assert.equal(slow.code, 'download_failed')
    assert.match(slow.message, /within 300 ms/)
  })

  it('keeps the SSRF guard: a private address, and a redirect to one, are refused', async () => {
    server.serve('/private.xml', { body: '<realty-feed/>' })
    const direct = await failure(downloadFeed(guarded, server.url('/private.xml'), NOTHING_KNOWN, LIMITS))
    assert.equal(direct.code, 'download_failed')
    assert.match(direct.message, /non-public/)
  })

  it('follows redirects', async () => {
    server.serve('/final.xml', { body: '<realty-feed/>' })
    server.serve('/moved.xml', { body: '', status: 302, headers: { location: '/final.xml' } })
    const download = await downloadFeed(open, server.url('/moved.xml'), NOTHING_KNOWN, LIMITS)
    assert.ok(download.changed)
    assert.equal(await contents(download), '<realty-feed/>')
    await download.discard()
  })
})
