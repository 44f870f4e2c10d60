import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { photo } from '../helpers/photos.js'
import type { ErrorBody, StoredImage, ValidationErrorBody } from '../helpers/responses.js'
import { ADDRESS_CASES, seenAs, urlHost } from '../helpers/ssrf-addresses.js'

/** A web server on loopback with a photo, a damaged one, a page, a missing file, chains of redirects and a redirect to no URL. */
async function startPhotoServer(jpeg: Buffer): Promise<{ server: Server; base: string }> {
  const server = createServer((request, response) => {
    const url = new URL(request.url!, 'http://x')
    if (url.pathname === '/photo.jpg') response.writeHead(200, { 'content-type': 'image/jpeg' }).end(jpeg)
    else if (url.pathname === '/cut-off.jpg') response.writeHead(200, { 'content-type': 'image/jpeg' }).end(jpeg.subarray(0, 600))
    else if (url.pathname === '/page') response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><body>Hello</body></html>')
    // A misconfigured CDN: its error page labelled as a photo.
    else if (url.pathname === '/denied.jpg')
      response.writeHead(200, { 'content-type': 'image/jpeg' }).end('<!doctype html><html><body>Access denied</body></html>')
    else if (url.pathname === '/redirect') {
      const hops = Number(url.searchParams.get('hops'))
      response.writeHead(302, { location: hops > 1 ? `/redirect?hops=${hops - 1}` : '/photo.jpg' }).end()
    } else if (url.pathname === '/bad-location') {
      // A redirect whose Location is not a URL at all (an unclosed IPv6 literal).
      response.writeHead(302, { location: 'http://[::1' }).end()
    } else response.writeHead(404).end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

describe('adding a photo by URL', () => {
  let t: TestApp
  let guarded: TestApp
  let agency: Tenant
  let rival: Tenant
  let propertyId: number
  let web: { server: Server; base: string }

  before(async () => {
    web = await startPhotoServer(await photo('jpeg', 320, 240))
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true' })
    agency = await createTenant(t.app, { email: 'url@agency.example' })
    rival = await createTenant(t.app, { email: 'rival-url@agency.example' })
    propertyId = (await submitProperty(t.app, agency)).id
    guarded = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'false' })
  })
  after(async () => {
    await t.close()
    await guarded.close()
    web.server.closeAllConnections()
    web.server.close()
  })

  const addByUrl = (app: TestApp, tenant: Tenant, payload: Record<string, unknown>) =>
    app.app.inject({ method: 'POST', url: '/property-images', headers: tenant.headers, payload })

  it('downloads (through 3 redirects), processes and stores the photo; source_url keeps the address', async () => {
    const url = `${web.base}/redirect?hops=3`
    const response = await addByUrl(t, agency, { property_id: propertyId, url, sort_order: 4 })
    assert.equal(response.statusCode, 201, response.body)
    const image = response.json<StoredImage>()
    assert.equal(response.headers.location, `/property-images/${image.id}`)
    assert.equal(image.source_url, url)
    assert.equal(image.sort_order, 4)
    assert.equal(image.width, 320)
    const served = await t.app.inject(new URL(image.url).pathname)
    assert.equal(served.statusCode, 200)
    assert.equal(served.headers['content-type'], 'image/jpeg')
  })

  it('refuses, with a 422 on url saying why: a page, a 404, more than 3 redirects, an unreachable host, a bad URL, a damaged photo', async () => {
    const cases: [string, RegExp][] = [
      [`${web.base}/page`, /did not return a JPEG, PNG or WebP photo \(it sent a web page\)/],
      // The bytes say what was sent, not the label.
      [`${web.base}/denied.jpg`, /did not return a JPEG, PNG or WebP photo \(it sent a web page\)/],
      [`${web.base}/cut-off.jpg`, /damaged or truncated/],
      [`${web.base}/missing.jpg`, /answered HTTP 404/],
      [`${web.base}/redirect?hops=4`, /more than 3 redirects/],
      [`${web.base}/bad-location`, /a redirect led to "http:\/\/\[::1", which is not a valid URL/],
      ['http://127.0.0.1:1/photo.jpg', /could not connect/i],
      ['ftp://example.com/photo.jpg', /only http and https/i],
      // An acronym keeps its capitals inside the sentence.
      ['http://user:secret@127.0.0.1/photo.jpg', /: URLs with credentials are not allowed\.$/],
    ]
    const photos = async () => (await t.app.inject({ url: `/property-images?property_id=${propertyId}`, headers: agency.headers })).json<StoredImage[]>()
    const before = await photos()
    for (const [url, why] of cases) {
      const response = await addByUrl(t, agency, { property_id: propertyId, url })
      assert.equal(response.statusCode, 422, `${url}: ${response.body}`)
      const body = response.json<ValidationErrorBody>()
      assert.match(body.detail, why, url)
      assert.deepEqual(
        body.errors.map((error) => error.loc),
        [['body', 'url']],
      )
    }
    assert.deepEqual(await photos(), before, 'nothing is stored')
  })

  it('refuses loopback and private addresses when ALLOW_PRIVATE_NETWORK is off, by name or by number', async () => {
    const owner = await createTenant(guarded.app, { email: 'guarded@agency.example' })
    const id = (await submitProperty(guarded.app, owner)).id
    const port = new URL(web.base).port
    for (const url of [
      `${web.base}/photo.jpg`,
      `http://localhost:${port}/photo.jpg`,
      `http://[::1]:${port}/photo.jpg`,
      'http://10.0.0.7/photo.jpg',
      'http://169.254.169.254/latest/meta-data',
    ]) {
      const response = await addByUrl(guarded, owner, { property_id: id, url })
      assert.equal(response.statusCode, 422, `${url}: ${response.body}`)
      assert.match(response.json<ErrorBody>().detail, /non-public/, url)
    }
    const images = await guarded.app.inject({ url: '/property-images', headers: owner.headers })
    assert.deepEqual(images.json<StoredImage[]>(), [])
  })

  // Each URL names the port of the photo server, so a loopback address let through would
  // download the photo. Public addresses are not tried: that would download from the internet.
  it('judges the address a URL parser reads, and the IPv4 address inside an IPv6 one', async () => {
    const owner = await createTenant(guarded.app, { email: 'guarded-forms@agency.example' })
    const id = (await submitProperty(guarded.app, owner)).id
    const port = new URL(web.base).port
    for (const entry of ADDRESS_CASES.filter((candidate) => !candidate.public)) {
      const url = `http://${urlHost(entry.address)}:${port}/photo.jpg`
      const response = await addByUrl(guarded, owner, { property_id: id, url })
      assert.equal(response.statusCode, 422, `${url} (${entry.form}): ${response.body}`)
      const body = response.json<ValidationErrorBody>()
      assert.equal(body.detail, `The photo could not be downloaded: the address ${seenAs(entry)} is private or otherwise non-public.`, `${url} (${entry.form})`)
      assert.deepEqual(body.errors[0]!.loc, ['body', 'url'])
    }
    const images = await guarded.app.inject({ url: '/property-images', headers: owner.headers })
    assert.deepEqual(images.json<StoredImage[]>(), [])
  })

  it('validates the body, needs a key, and keeps to the caller’s properties', async () => {
    const invalid = await addByUrl(t, agency, { property_id: 'x', sort_order: 'first', extra: true })
    assert.equal(invalid.statusCode, 422)
    const unauthenticated = await t.app.inject({ method: 'POST', url: '/property-images', payload: { property_id: propertyId, url: `${web.base}/photo.jpg` } })
    assert.equal(unauthenticated.statusCode, 401)
    const foreign = await addByUrl(t, rival, { property_id: propertyId, url: `${web.base}/photo.jpg` })
    assert.equal(foreign.statusCode, 404)
    assert.deepEqual(foreign.json<ErrorBody>(), { detail: 'Property not found' })
    const theirs = await t.app.inject({ url: `/property-images?property_id=${propertyId}`, headers: rival.headers })
    assert.deepEqual(theirs.json<StoredImage[]>(), [])
  })
})
