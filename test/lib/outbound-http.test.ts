import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { isPublicAddress, OutboundClient, OutboundError } from '../../src/lib/outbound-http.js'

describe('the guarded outbound HTTP client', () => {
  const server = createServer((request, response) => {
    if (request.url === '/to-loopback') response.writeHead(302, { location: `http://127.0.0.1:${port}/secret` }).end()
    else if (request.url === '/to-localhost') response.writeHead(307, { location: `http://localhost:${port}/secret` }).end()
    else if (request.url === '/big') response.end(Buffer.alloc(10_000, 120))
    else if (request.url === '/slow') setTimeout(() => response.end('late'), 2_000)
    else response.end('secret')
  })
  let port = 0
  before(async () => {
    // On every address, so it is reachable as 127.0.0.2 too.
    server.listen(0, '0.0.0.0')
    await once(server, 'listening')
    port = (server.address() as AddressInfo).port
  })
  after(() => server.closeAllConnections() ?? server.close())

  it('knows public from non-public addresses', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '2a00:1450:4010:c05::71']) assert.ok(isPublicAddress(address), address)
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fd00::2',
      'fe80::1',
      '::ffff:127.0.0.1',
      '192.0.2.2',
      '224.0.0.1',
    ]) {
      assert.ok(!isPublicAddress(address), address)
    }
  })

  // No public address is reachable from a test, so this client treats 127.0.0.2 as the one
  // allowed address: the first hop connects, the redirect to loopback must not.
  const client = new OutboundClient({ allowPrivateNetwork: false, isAllowedAddress: (address) => address === '127.0.0.2' })
  after(() => client.close())
  const get = (path: string, extra: Partial<Parameters<OutboundClient['request']>[0]> = {}) =>
    client.request({ url: `http://127.0.0.2:${port}${path}`, timeoutMs: 1_000, maxBodyBytes: 1_000, onLargeBody: 'fail', maxRedirects: 3, ...extra })

  it('re-checks every redirect hop: to a loopback address, or a name resolving to one, is refused', async () => {
    assert.equal((await get('/ok')).body.toString(), 'secret')
    for (const path of ['/to-loopback', '/to-localhost']) {
      await assert.rejects(get(path), (error: unknown) => error instanceof OutboundError && error.kind === 'blocked_address', path)
    }
  })

  it('returns a redirect unfollowed when asked to follow none (webhooks)', async () => {
    const response = await get('/to-loopback', { maxRedirects: 0 })
    assert.equal(response.status, 302)
  })

  it('caps the body: an error for downloads, a cut for logs', async () => {
    await assert.rejects(get('/big'), (error: unknown) => error instanceof OutboundError && error.kind === 'too_large')
    const cut = await get('/big', { onLargeBody: 'truncate' })
    assert.equal(cut.body.length, 1_000)
    assert.equal(cut.truncated, true)
  })

  it('gives up after the time limit', async () => {
    await assert.rejects(get('/slow', { timeoutMs: 200 }), (error: unknown) => error instanceof OutboundError && error.kind === 'timeout')
  })

  it('refuses non-public destinations before connecting, when checking a URL to store', async () => {
    const open = new OutboundClient({ allowPrivateNetwork: false })
    try {
      await assert.rejects(open.checkUrl('http://localhost/hook'), (error: unknown) => error instanceof OutboundError && error.kind === 'blocked_address')
      await assert.rejects(open.checkUrl('http://127.0.0.1/hook'), (error: unknown) => error instanceof OutboundError && error.kind === 'blocked_address')
      await assert.rejects(open.checkUrl('https://user:pw@example.com/'), (error: unknown) => error instanceof OutboundError && error.kind === 'invalid_url')
    } finally {
      await open.close()
    }
  })
})
