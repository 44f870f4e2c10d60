/**
 * The upload form's odd shapes (POST /property-images/upload): a part without a name, a field
 * given twice, a pixel limit that is not whole megapixels. Each is a 422 that says what is wrong,
 * and nothing is stored.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { multipartBody, photo, upload } from '../helpers/photos.js'
import type { ErrorBody, StoredImage, ValidationErrorBody } from '../helpers/responses.js'

/** A raw multipart/form-data request to the upload route (boundary `cut`), bytes as latin1. */
function sendForm(t: TestApp, tenant: Tenant, body: string) {
  return t.app.inject({
    method: 'POST',
    url: '/property-images/upload',
    headers: { ...tenant.headers, 'content-type': 'multipart/form-data; boundary=cut' },
    payload: Buffer.from(body, 'latin1'),
  })
}
const field = (name: string, value: string) => `--cut\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
const filePart = (bytes: Buffer) =>
  `--cut\r\nContent-Disposition: form-data; name="file"; filename="photo.jpg"\r\nContent-Type: image/jpeg\r\n\r\n${bytes.toString('latin1')}\r\n`

describe('the upload form, oddly built', () => {
  let t: TestApp
  let agency: Tenant

  before(async () => {
    t = await buildTestApp({ IMAGE_MAX_PIXELS: '500000' })
    agency = await createTenant(t.app, { email: 'odd-forms@agency.example' })
  })
  after(() => t.close())

  it('is taken on the upload route alone: sent to the JSON routes of photos, a form is a 415, changing nothing', async () => {
    const propertyId = (await submitProperty(t.app, agency)).id
    const form = await multipartBody({ file: await photo('jpeg', 32, 32), fields: { property_id: String(propertyId) } })
    const send = (method: 'POST' | 'PUT', url: string) =>
      t.app.inject({ method, url, headers: { ...agency.headers, 'content-type': form.contentType }, payload: form.payload })
    const uploaded = await send('POST', '/property-images/upload')
    assert.equal(uploaded.statusCode, 201, uploaded.body)
    const { id } = uploaded.json<StoredImage>()
    for (const [method, url] of [
      ['POST', '/property-images'],
      ['PUT', `/property-images/${id}`],
    ] as const) {
      const refused = await send(method, url)
      assert.equal(refused.statusCode, 415, `${method} ${url}: ${refused.body}`)
      assert.equal(refused.json<ErrorBody>().detail, 'This content type is not accepted here; send application/json.')
    }
    const photos = await t.app.inject({ url: `/property-images?property_id=${propertyId}`, headers: agency.headers })
    assert.deepEqual(
      photos.json<StoredImage[]>().map((image) => [image.id, image.sort_order]),
      [[id, 0]],
    )
  })

  it('names a part without a name as such, with a loc of strings', async () => {
    // decisions.md D2: a 422's detail is a readable sentence and each loc part a string or an
    // index (the OpenAPI ValidationError). A part whose Content-Disposition has no name has none.
    const response = await sendForm(t, agency, `--cut\r\nContent-Disposition: form-data\r\n\r\n5\r\n--cut--\r\n`)
    assert.equal(response.statusCode, 422, response.body)
    const body = response.json<ValidationErrorBody>()
    for (const error of body.errors) {
      for (const part of error.loc)
        assert.ok(typeof part === 'string' || (Number.isInteger(part) && part >= 0), `loc ${JSON.stringify(error.loc)} in ${response.body}`)
    }
    assert.match(body.detail, /part without a name/)
  })

  it('tells a client that sends the photo as a text field, not a file part, that it must be a file', async () => {
    const property = (await submitProperty(t.app, agency)).id
    const response = await sendForm(t, agency, `${field('property_id', String(property))}${field('file', 'iVBORw0KGgo=')}--cut--\r\n`)
    assert.equal(response.statusCode, 422, response.body)
    assert.deepEqual(response.json<ValidationErrorBody>().errors, [{ loc: ['body', 'file'], msg: 'must be a file part (with a filename), not a text field' }])
  })

  it('says the same of a whole photo sent as a text field (curl -F "file=<photo.jpg"), and refuses a text file beside a file part', async () => {
    const property = (await submitProperty(t.app, agency)).id
    const jpeg = await photo('jpeg', 64, 48)
    const response = await sendForm(t, agency, `${field('property_id', String(property))}${field('file', jpeg.toString('latin1'))}--cut--\r\n`)
    assert.equal(response.statusCode, 422, response.body)
    assert.deepEqual(response.json<ValidationErrorBody>().errors, [{ loc: ['body', 'file'], msg: 'must be a file part (with a filename), not a text field' }])
    const both = await sendForm(t, agency, `${field('property_id', String(property))}${field('file', 'x')}${filePart(jpeg)}--cut--\r\n`)
    assert.equal(both.statusCode, 422, both.body)
    assert.deepEqual(both.json<ValidationErrorBody>().errors, [{ loc: ['body', 'file'], msg: 'is given more than once' }])
    const [row] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from property_images where property_id = ${property}`)
    assert.equal(row?.n, 0)
  })

  it('refuses a form that gives property_id twice, storing nothing', async () => {
    // docs/api.md#photos: the form is one file, property_id and sort_order. Either of two values
    // could be the one meant: the photo is not stored on a guess.
    const first = (await submitProperty(t.app, agency)).id
    const second = (await submitProperty(t.app, agency)).id
    const jpeg = await photo('jpeg', 64, 48)
    const response = await sendForm(t, agency, `${field('property_id', String(first))}${field('property_id', String(second))}${filePart(jpeg)}--cut--\r\n`)
    assert.equal(response.statusCode, 422, response.body)
    assert.deepEqual(response.json<ValidationErrorBody>().errors, [{ loc: ['body', 'property_id'], msg: 'is given more than once' }])
    const [row] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from property_images where property_id in (${first}, ${second})`)
    assert.equal(row!.n, 0, 'nothing stored')
  })

  it('states a pixel limit that is not whole megapixels as it is', async () => {
    // docs/operations.md: IMAGE_MAX_PIXELS may be any number from 1; the refusal states it
    // (here 500,000, which in whole megapixels would read "0").
    const id = (await submitProperty(t.app, agency)).id
    const response = await upload(t.app, agency, { file: await photo('jpeg', 1000, 1000), fields: { property_id: String(id) } })
    assert.equal(response.statusCode, 422, response.body)
    const { detail } = response.json<ErrorBody>()
    assert.equal(detail, 'The photo is 1000×1000 pixels; at most 500,000 pixels are accepted.')
  })
})
