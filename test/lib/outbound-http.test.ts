import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import { isIP, type AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { isPublicAddress, OutboundClient, OutboundError } from '../../src/lib/outbound-http.js'
import { ADDRESS_CASES, resolvable } from '../helpers/ssrf-addresses.js'

/** What became of a redirect's large body: sent whole (the client read it all), or the client hung up first. */
const redirectBodies: Promise<'read whole' | 'hung up'>[] = []
const REDIRECT_BODY_BYTES = 48 * 1024 * 1024

function largeRedirect(response: ServerResponse, location: string): void {
  response.writeHead(302, { location, 'content-length': String(REDIRECT_BODY_BYTES) })
  const chunk = Buffer.alloc(1024 * 1024, 97)
  let sent = 0
  const pump = () => {
    while (sent < REDIRECT_BODY_BYTES) {
      sent += chunk.length
      if (!response.write(chunk)) return void response.once('drain', pump)
    }
    response.end()
  }
  pump()
  redirectBodies.push(once(response, 'close').then(() => (response.writableFinished ? 'read whole' : 'hung up')))
}

describe('the guarded outbound HTTP client', () => {
  const server = createServer((request, response) => {
    if (request.url === '/big-redirect') largeRedirect(response, '/ok')
    else if (request.url === '/to-loopback') response.writeHead(302, { location: `http://127.0.0.1:${port}/secret` }).end()
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

  it('knows public from non-public addresses, judging the IPv4 address an IPv6 form carries', () => {
    for (const entry of ADDRESS_CASES) assert.equal(isPublicAddress(entry.address), entry.public, `${entry.address}: ${entry.form}`)
  })

  it('takes what it cannot parse for non-public', () => {
    for (const text of ['', 'example.com', '1.2.3.4.5', '256.0.0.1', '::g', '[::1]', '2001:db8::1::2']) assert.equal(isPublicAddress(text), false, text)
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

  it('does not read the body of a redirect it follows: a redirect’s body is capped by nothing', async () => {
    assert.equal((await get('/big-redirect')).body.toString(), 'secret')
    assert.equal(await redirectBodies.at(-1), 'hung up', 'the 48 MiB body of the redirect was read')
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

  // Each address behind a name of its own, so no pooled connection to one name skips the
  // lookup for another. A refused loopback address would reach the server above if let through.
  const resolvableCases = ADDRESS_CASES.filter(resolvable).map((entry, index) => ({ ...entry, hostname: `host-${index}.ssrf.test` }))
  const resolving = new OutboundClient({
    allowPrivateNetwork: false,
    resolve: async (hostname) => {
      const entry = resolvableCases.find((candidate) => candidate.hostname === hostname)
      if (!entry) throw Object.assign(new Error(`${hostname} is not in the table.`), { code: 'ENOTFOUND' })
      return [{ address: entry.address, family: isIP(entry.address) }]
    },
  })
  after(() => resolving.close())

  it('refuses a host name that resolves to a non-public address when checking a URL to store', async () => {
    await Promise.all(
      resolvableCases.map(async (entry) => {
        const check = resolving.checkUrl(`https://${entry.hostname}/hook`)
        if (entry.public) await check
        else
          await assert.rejects(check, (error: unknown) => error instanceof OutboundError && error.kind === 'blocked_address', `${entry.address}: ${entry.form}`)
      }),
    )
  })

  it('gives up checking a URL to store when its host’s name servers do not answer, in its own time', async () => {
    const silent = new OutboundClient({ allowPrivateNetwork: false, resolve: () => new Promise(() => {}), checkResolveTimeoutMs: 100 })
    try {
      await assert.rejects(
        silent.checkUrl('https://silent.ssrf.test/hook'),
        (error: unknown) => error instanceof OutboundError && error.kind === 'dns' && /within 100 ms/.test(error.message),
      )
    } finally {
      await silent.close()
    }
  })

  // The public addresses pass the same rule in the test above; connecting to them would make
  // this test depend on the machine's network.
  it('refuses at connect time a host name that resolves to a non-public address', async () => {
    const refused = resolvableCases.filter((entry) => !entry.public)
    const outcomes = await Promise.all(
      refused.map((entry) =>
        resolving.request({ url: `http://${entry.hostname}:${port}/`, timeoutMs: 1_000, maxBodyBytes: 1_000, onLargeBody: 'fail', maxRedirects: 0 }).then(
          () => 'answered',
          (error: unknown) => (error instanceof OutboundError ? error.kind : String(error)),
        ),
      ),
    )
    refused.forEach((entry, index) => assert.equal(outcomes[index], 'blocked_address', `${entry.address}: ${entry.form}`))
  })
})
