import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { createMlsClient, multipartBody, verifyWebhook, WebhookVerificationError, type MlsClient } from '@open-mls/client'
import { Headers as UndiciHeaders } from 'undici'
import { ADMIN_KEY } from '../helpers/app.js'
import { startLiveService, type LiveService } from '../helpers/live-service.js'
import { photo } from '../helpers/photos.js'
import { startReceiver, waitFor, type Receiver } from '../helpers/webhooks.js'

/** What every openapi-fetch call answers: the parsed body on success, the error body otherwise. */
interface CallResult<Data> {
  data?: Data
  error?: unknown
  response: Response
}

/** The body of a call that answered `status`; fails with the status and error body otherwise. */
async function expectStatus<Data>(call: Promise<CallResult<Data>>, status: number): Promise<Data> {
  const { data, error, response } = await call
  assert.equal(response.status, status, `${response.url}: ${response.status} ${JSON.stringify(error)}`)
  assert.ok(data !== undefined, `${response.url}: no body`)
  return data
}

/**
 * An agency's whole path through the published client, against the service listening on a
 * port with its worker running: every call is typed by the generated schema, none is cast.
 */
describe('the TypeScript client against a live service', () => {
  let service: LiveService
  let receiver: Receiver
  let publicApi: MlsClient
  let agency: MlsClient

  const email = `agency-${randomBytes(4).toString('hex')}@client.example`
  let requestCode: string
  let tenantId: number
  let propertyId: number
  let webhook: { id: number; secret: string }

  before(async () => {
    service = await startLiveService({ ALLOW_PRIVATE_NETWORK: 'true' })
    receiver = await startReceiver()
    publicApi = createMlsClient({ baseUrl: service.baseUrl })
  })
  after(async () => {
    await receiver?.close()
    await service?.close()
  })

  it('registers, and reads the key once an operator approves', async () => {
    const registration = await expectStatus(
      publicApi.POST('/tenants/register', { body: { company_name: 'Агентство «Клиент»', email, contact_name: 'Мария Иванова', phone: '8 (912) 345-67-89' } }),
      201,
    )
    assert.equal(registration.status, 'pending')
    requestCode = registration.request_code

    const statusOf = () => publicApi.GET('/tenants/register/{request_code}', { params: { path: { request_code: requestCode }, query: { email } } })
    const waiting = await expectStatus(statusOf(), 200)
    assert.equal(waiting.status, 'pending')
    assert.ok(!('api_key' in waiting), 'no key before approval')

    // The admin API is for operators and not part of the client.
    const approval = await fetch(`${service.baseUrl}/admin/registrations/${requestCode}/approve`, { method: 'POST', headers: { 'X-Admin-Key': ADMIN_KEY } })
    assert.equal(approval.status, 200, await approval.text())

    const approved = await expectStatus(statusOf(), 200)
    // The document's oneOf on `status` tells the type checker that an approved status may carry its key:
    // it does while the key issued at approval is active.
    assert.ok(approved.status === 'approved')
    assert.ok(approved.api_key?.startsWith('mls_live_'), 'the approved status carries the API key')
    assert.ok(approved.tenant_id !== undefined)
    tenantId = approved.tenant_id

    agency = createMlsClient({ baseUrl: service.baseUrl, apiKey: approved.api_key! })
    const me = await expectStatus(agency.GET('/tenants/me'), 200)
    assert.equal(me.tenant_id, tenantId)
    assert.equal(me.email, email)
  })

  it('is refused without the key on the agency routes, with the error typed', async () => {
    const { error, response } = await publicApi.GET('/properties')
    assert.equal(response.status, 401)
    assert.equal(error?.detail, 'Invalid or missing API key')
  })

  it('submits a listing and sees it published by the internal check', async () => {
    const created = await expectStatus(
      agency.POST('/properties', {
        params: { header: { 'idempotency-key': randomBytes(8).toString('hex') } },
        body: {
          property_type: 'Квартира',
          deal_type: 'Продажа',
          price: 8_500_000,
          description: 'Светлая двухкомнатная квартира с видом на парк.',
          owner: { name: 'Иван Петров', phone: '8 (912) 345-67-89' },
          location: { city_id: 1, district_id: 1, address: `Москва, ул. Тверская, д. ${randomBytes(3).toString('hex')}` },
          attributes: { area: '54.5', rooms: '2', floor: '5', total_floors: '9', building_type: 'Кирпичный' },
        },
      }),
      201,
    )
    assert.equal(created.status_id, 1)
    assert.equal(created.owner?.phone, '+7 912 345-67-89')
    propertyId = created.id

    // The worker runs the check within about a second of the submission.
    await waitFor(
      async () => {
        const { data } = await agency.GET('/properties/{id}', { params: { path: { id: propertyId } } })
        return data?.status_id === 2
      },
      10_000,
      'the listing to be published',
    )
    const mine = await expectStatus(agency.GET('/properties', { params: { query: { status_id: 2 } } }), 200)
    assert.deepEqual(
      mine.items.map((item) => item.id),
      [propertyId],
    )
  })

  it('finds the listing in the public catalogue, without the owner', async () => {
    const page = await expectStatus(publicApi.GET('/mls/properties', { params: { query: { tenant_id: tenantId, city_id: 1, limit: 10 } } }), 200)
    assert.equal(page.total, 1)
    const [item] = page.items
    assert.equal(item?.id, propertyId)
    assert.equal(item.property_type.name, 'Квартира')
    assert.equal(item.price, 8_500_000)

    const detail = await expectStatus(publicApi.GET('/mls/properties/{id}', { params: { path: { id: propertyId } } }), 200)
    assert.equal(detail.description, 'Светлая двухкомнатная квартира с видом на парк.')
    assert.equal(detail.city.id, 1)
    assert.ok(!('owner' in detail), 'the catalogue never shows the owner')
  })

  it('uploads a photo as multipart form data, and the catalogue shows it', async () => {
    const jpeg = await photo('jpeg', 320, 240)
    const image = await expectStatus(
      agency.POST('/property-images/upload', {
        body: { file: new Blob([jpeg], { type: 'image/jpeg' }), property_id: propertyId },
        bodySerializer: multipartBody,
      }),
      201,
    )
    assert.equal(image.property_id, propertyId)
    assert.equal(image.sort_order, 0)

    const images = await expectStatus(agency.GET('/property-images', { params: { query: { property_id: propertyId } } }), 200)
    assert.deepEqual(
      images.map((each) => each.id),
      [image.id],
    )
    const detail = await expectStatus(publicApi.GET('/mls/properties/{id}', { params: { path: { id: propertyId } } }), 200)
    assert.equal(detail.images.length, 1)
    assert.ok(detail.thumbnail_url, 'the first photo gives the listing its thumbnail')
  })

  it('subscribes a receiver, sends it the test event and verifies its signature', async () => {
    const created = await expectStatus(agency.POST('/webhooks', { body: { url: receiver.url, events: ['mls.new_listing'], description: 'CRM import' } }), 201)
    assert.ok(created.secret.startsWith('whsec_'))
    webhook = { id: created.id, secret: created.secret }

    const entry = await expectStatus(agency.POST('/webhooks/{id}/test', { params: { path: { id: webhook.id } } }), 200)
    assert.equal(entry.trigger, 'test')
    assert.equal(entry.status, 'succeeded', entry.error ?? undefined)

    const delivery = receiver.requests.find((request) => request.headers['webhook-id'] === `msg_${entry.event_id}`)
    assert.ok(delivery, 'the receiver got the test event')
    const event = verifyWebhook(webhook.secret, delivery.body, delivery.headers)
    assert.equal(event.type, 'webhook.test')
    assert.ok('subscription_id' in event.data)
    assert.equal(event.data.subscription_id, webhook.id)

    // The same delivery as a Fetch API handler holds it: the body as bytes, the headers as Headers.
    assert.deepEqual(verifyWebhook(webhook.secret, Buffer.from(delivery.body), new Headers(toHeaderPairs(delivery.headers))), event)
    // Headers of another fetch implementation than the global one (the undici package's, node-fetch's).
    assert.deepEqual(verifyWebhook(webhook.secret, delivery.body, new UndiciHeaders(toHeaderPairs(delivery.headers))), event)
    // A receiver refuses what it cannot verify: an altered body, or another subscription's secret.
    assert.throws(() => verifyWebhook(webhook.secret, delivery.body.replace('webhook.test', 'mls.new_listing'), delivery.headers), WebhookVerificationError)
    const otherSecret = `whsec_${randomBytes(24).toString('base64')}`
    assert.throws(() => verifyWebhook(otherSecret, delivery.body, delivery.headers), WebhookVerificationError)
    // A secret that is none (unset, cut short) is the receiver's mistake, told apart from a forged delivery.
    for (const notASecret of ['', 'whsec_', webhook.secret.slice(0, -1), webhook.secret.slice('whsec_'.length)]) {
      assert.throws(
        () => verifyWebhook(notASecret, delivery.body, delivery.headers),
        (error: unknown) => {
          assert.ok(error instanceof TypeError && !(error instanceof WebhookVerificationError), String(error))
          assert.match(error.message, /^verifyWebhook needs the subscription's secret, "whsec_" then base64/)
          assert.ok(notASecret.length < 8 || !error.message.includes(notASecret), 'the message does not repeat the secret')
          return true
        },
      )
    }

    const log = await expectStatus(agency.GET('/webhooks/{id}/logs', { params: { path: { id: webhook.id } } }), 200)
    assert.equal(log.items[0]?.id, entry.id)
  })
})

/** Node's request headers as the name/value pairs the Fetch API's Headers takes. */
function toHeaderPairs(headers: Record<string, string | string[] | undefined>): [string, string][] {
  return Object.entries(headers).flatMap(([name, value]) =>
    value === undefined ? [] : [[name, Array.isArray(value) ? value.join(', ') : value] as [string, string]],
  )
}
