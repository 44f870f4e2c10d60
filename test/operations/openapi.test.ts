import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ADMIN_KEY, buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, propertyBody, submitProperty } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { PropertySubmission } from '../../src/modules/properties/properties.schemas.js'

/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return --
   The OpenAPI documents are walked as untyped JSON, through `$ref`s and any path: their shape is
   what these tests check, so no static type of it can be assumed here. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>

const METHODS = ['get', 'put', 'post', 'delete', 'patch']

function operationsOf(document: Json): { method: string; path: string; operation: Json }[] {
  return Object.entries(document.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => ({ method, path, operation: operation as Json })),
  )
}

/** Every `$ref` in the document, wherever it is. */
function refsOf(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) refsOf(item, found)
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push(value)
      else refsOf(value, found)
    }
  }
  return found
}

const resolve = (document: Json, ref: string): unknown =>
  ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((node, part) => (node as Json | undefined)?.[part.replaceAll('~1', '/').replaceAll('~0', '~')], document)

/** A response, followed through its `$ref` when it is a shared one. */
const answer = (document: Json, response: Json | undefined): Json | undefined => (response?.$ref ? (resolve(document, response.$ref) as Json) : response)

describe('the OpenAPI documents', () => {
  let t: TestApp
  let document: Json
  before(async () => {
    t = await buildTestApp()
    document = (await t.app.inject('/openapi.json')).json()
  })
  after(() => t.close())

  it('declare a body that may be left out as not required, and every other as required', () => {
    // Creating a key takes a body of optional fields, and none; a PATCH must name a field.
    assert.equal(document.paths['/tenants/me/api-keys'].post.requestBody.required, false)
    for (const [path, method] of [
      ['/properties/{id}', 'patch'],
      ['/webhooks/{id}', 'patch'],
      ['/properties', 'post'],
    ] as const)
      assert.equal(document.paths[path][method].requestBody.required, true, `${method} ${path}`)
  })

  it('give every operation a unique verb-and-noun operationId, a description and a tag', () => {
    const ids = new Set<string>()
    for (const { method, path, operation } of operationsOf(document)) {
      const where = `${method} ${path}`
      assert.match(operation.operationId ?? '', /^[a-z]+[A-Z][A-Za-z]+$/, `${where} has an operationId`)
      assert.ok(!ids.has(operation.operationId), `${where}: ${operation.operationId} is unique`)
      ids.add(operation.operationId)
      assert.ok(operation.description, `${where} has a description`)
      assert.ok(operation.tags?.length, `${where} has a tag`)
    }
    for (const id of ['createProperty', 'searchCatalogue', 'getCatalogueProperty', 'registerTenant', 'getRegistrationStatus', 'listWebhookLogs']) {
      assert.ok(ids.has(id), id)
    }
  })

  it('describe the public and tenant API only: no admin path, no admin key', () => {
    assert.deepEqual(
      Object.keys(document.paths).filter((path) => path.startsWith('/admin')),
      [],
    )
    assert.deepEqual(Object.keys(document.components.securitySchemes), ['ApiKey'])
    assert.ok(!JSON.stringify(document).includes('AdminKey'))
  })

  it('name their schemas under components.schemas and refer to them, every reference resolving', () => {
    const names = Object.keys(document.components.schemas)
    for (const name of [
      'Property',
      'PropertySubmission',
      'PropertyPatch',
      'PropertyPage',
      'CatalogueItem',
      'CatalogueProperty',
      'CataloguePage',
      'Image',
      'Webhook',
      'WebhookCreated',
      'WebhookLogEntry',
      'WebhookLogPage',
      'Error',
      'ValidationError',
      'ReferenceItem',
      'City',
      'RegistrationStatus',
      'ApiKey',
      'ApiKeyCreated',
      'ApiKeyPage',
    ]) {
      assert.ok(names.includes(name), `${name} is a named schema`)
    }
    const property = document.paths['/properties/{id}'].get.responses['200'].content['application/json'].schema
    assert.deepEqual(property, { $ref: '#/components/schemas/Property' })
    for (const ref of new Set(refsOf(document))) assert.ok(resolve(document, ref), `${ref} resolves`)
  })

  it('type the answers as tightly as the requests', () => {
    const schemas = document.components.schemas
    assert.deepEqual(schemas.Property.properties.property_type, { $ref: '#/components/schemas/PropertyTypeName' })
    assert.deepEqual(schemas.Property.properties.deal_type, { $ref: '#/components/schemas/DealTypeName' })
    assert.deepEqual(schemas.DealTypeName.enum, ['Продажа', 'Долгосрочная аренда', 'Посуточная аренда'])
    assert.equal(schemas.Property.properties.status_id.minimum, 1)
    assert.equal(schemas.Property.properties.status_id.maximum, 5)
    assert.ok(schemas.ModerationReasonCode.enum.includes('price_missing'))
    assert.deepEqual(schemas.Webhook.properties.events.items, { $ref: '#/components/schemas/WebhookEventType' })
    assert.deepEqual(schemas.WebhookCreate.properties.events.items, { $ref: '#/components/schemas/WebhookEventType' })

    // An approved status is told apart by `status`, and only it carries the key: while that key
    // is active, so not always.
    const status = schemas.RegistrationStatus
    assert.equal(status.oneOf.length, 3)
    assert.equal(status.discriminator.propertyName, 'status')
    assert.equal(status.discriminator.mapping.approved, '#/components/schemas/RegistrationApproved')
    assert.ok(schemas.RegistrationApproved.properties.api_key)
    assert.deepEqual(schemas.RegistrationApproved.required.sort(), ['request_code', 'status', 'tenant_id'])
    assert.equal(schemas.RegistrationPending.properties.api_key, undefined)

    const conflict = document.paths['/properties/{id}/status'].post.responses['409'].content['application/json'].schema
    assert.deepEqual(conflict, { $ref: '#/components/schemas/StatusConflict' })
    assert.ok(schemas.StatusConflict.properties.allowed_moves)

    const upload = document.paths['/property-images/upload'].post.requestBody.content['multipart/form-data'].schema
    assert.deepEqual(upload, { $ref: '#/components/schemas/ImageUpload' })
    assert.equal(schemas.ImageUpload.properties.file.type, 'string')
    assert.equal(schemas.ImageUpload.properties.file.format, 'binary')
  })

  it('give every timestamp the date-time format, the nullable ones too', () => {
    const timestamps: [string, Json][] = []
    const visit = (node: unknown, name: string) => {
      if (Array.isArray(node)) return node.forEach((item) => visit(item, name))
      if (!node || typeof node !== 'object') return
      const schema = node as Json
      if (/(_at|^timestamp)$/.test(name) && !('$ref' in schema)) timestamps.push([name, schema])
      for (const [key, value] of Object.entries(schema)) {
        if (key === 'properties') for (const [property, inner] of Object.entries(value as Json)) visit(inner, property)
        else if (key !== 'examples') visit(value, key)
      }
    }
    visit(document.components.schemas, '')
    assert.ok(timestamps.length > 10)
    for (const [name, schema] of timestamps) {
      const variants = (schema.anyOf as Json[] | undefined) ?? [schema]
      const text = variants.find((variant) => variant.type === 'string')
      assert.equal(text?.format, 'date-time', `${name}: ${JSON.stringify(schema)}`)
    }
  })

  it('declare the headers the answers carry, and 400, 500 and 503 everywhere', () => {
    const headersOf = (response: Json) => Object.keys(answer(document, response)?.headers ?? {})
    const created = operationsOf(document).filter(({ operation }) => operation.responses['201'])
    assert.ok(created.length >= 5)
    for (const { path, operation } of created) assert.ok(headersOf(operation.responses['201']).includes('Location'), path)
    assert.ok(headersOf(document.paths['/properties'].post.responses['201']).includes('Idempotent-Replayed'))
    for (const { method, path, operation } of operationsOf(document)) {
      const where = `${method} ${path}`
      const limited = operation.responses['429']
      if (limited) {
        assert.ok(headersOf(limited).includes('Retry-After'), where)
        // A route that counts its requests says so on its 429 as on its successes.
        const success = Object.keys(operation.responses).find((status) => status.startsWith('2'))!
        if (headersOf(operation.responses[success]).includes('RateLimit-Limit')) {
          // And on its 500 and 503: a request counted, then failing, carries them as any answer.
          for (const status of ['429', '500', '503']) {
            for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) {
              assert.ok(headersOf(operation.responses[status]).includes(name), `${where} ${status} ${name}`)
            }
          }
        }
      }
      // Behind a key, an address that failed too many key checks is refused with a 429.
      if (operation.security) for (const status of ['401', '429']) assert.ok(operation.responses[status], `${where} declares ${status}`)
      // A path that is not valid percent-encoding, or a request without Host, is a 400 anywhere;
      // any route answers 503 while the service starts (the liveness probe: while it stops).
      for (const status of ['400', '500', '503'])
        assert.ok(answer(document, operation.responses[status])?.content['application/json'], `${where} declares ${status}`)
    }
    assert.ok(document.components.headers['Retry-After'])
  })

  it('declare on every operation that takes a body, or could be sent one, the refusals of a body: 400, 413, 415 and 422, the operators’ too', async () => {
    const operators = (await t.app.inject({ url: '/admin/openapi.json', headers: { 'x-admin-key': ADMIN_KEY } })).json<Json>()
    // A body sent to an operation that takes none is read, and refused, as any other (docs/api.md#errors).
    const bodied = [...operationsOf(document), ...operationsOf(operators)].filter(
      ({ method, operation }) => operation.requestBody || ['post', 'put', 'patch', 'delete'].includes(method),
    )
    assert.ok(bodied.filter(({ operation }) => !operation.requestBody).length >= 10)
    const missing = bodied.flatMap(({ method, path, operation }) =>
      ['400', '413', '415', '422'].filter((status) => !operation.responses[status]).map((status) => `${method} ${path} ${status}`),
    )
    assert.deepEqual(missing, [])
  })

  it('describe every event a receiver gets, with the signature headers', () => {
    assert.deepEqual(Object.keys(document.webhooks).sort(), [
      'feed.run_finished',
      'mls.listing_removed',
      'mls.listing_updated',
      'mls.new_listing',
      'property.published',
      'property.rejected',
      'webhook.test',
    ])
    for (const [type, item] of Object.entries(document.webhooks as Json)) {
      const operation = item.post as Json
      const headers = (operation.parameters as Json[]).filter((parameter) => parameter.in === 'header').map((parameter) => parameter.name)
      assert.deepEqual(headers, ['webhook-id', 'webhook-timestamp', 'webhook-signature'], type)
      const payload = resolve(document, operation.requestBody.content['application/json'].schema.$ref) as Json
      assert.deepEqual(payload.properties.type.enum, [type])
      assert.deepEqual(payload.required, ['type', 'timestamp', 'data'])
    }
    const newListing = resolve(document, document.webhooks['mls.new_listing'].post.requestBody.content['application/json'].schema.$ref) as Json
    assert.deepEqual(newListing.properties.data, { $ref: '#/components/schemas/CatalogueItem' })
    const removed = resolve(document, document.webhooks['mls.listing_removed'].post.requestBody.content['application/json'].schema.$ref) as Json
    const removedData = resolve(document, removed.properties.data.$ref) as Json
    assert.ok((removedData.properties.reason.enum as string[]).includes('unmatched'))
    // A 410 switches a subscription off, but not in answer to a test event.
    assert.ok(document.webhooks['mls.new_listing'].post.responses['410'])
    assert.equal(document.webhooks['webhook.test'].post.responses['410'], undefined)
  })

  it('serve the admin API in a document of its own, behind X-Admin-Key', async () => {
    for (const headers of [{}, { 'x-admin-key': 'not-the-key' }]) {
      const refused = await t.app.inject({ url: '/admin/openapi.json', headers })
      assert.equal(refused.statusCode, 401)
      assert.deepEqual(refused.json(), { detail: 'Invalid or missing admin key' })
    }
    const response = await t.app.inject({ url: '/admin/openapi.json', headers: { 'x-admin-key': ADMIN_KEY } })
    assert.equal(response.statusCode, 200)
    const admin = response.json<Json>()
    assert.equal(admin.openapi, '3.1.0')
    const paths = Object.keys(admin.paths)
    for (const path of [
      '/admin/registrations',
      '/admin/registrations/{request_code}/approve',
      '/admin/cities',
      '/admin/properties',
      '/admin/properties/{id}/reject',
      '/admin/tenants/{tenant_id}/suspend',
      '/admin/tenants/{tenant_id}/api-keys/{id}/revoke',
    ]) {
      assert.ok(paths.includes(path), path)
    }
    assert.ok(paths.every((path) => path.startsWith('/admin/')))
    assert.ok(!paths.includes('/admin/openapi.json'))
    assert.deepEqual(Object.keys(admin.components.securitySchemes), ['AdminKey'])
    for (const { method, path, operation } of operationsOf(admin)) {
      assert.ok(operation.operationId && operation.description, `${method} ${path}`)
      assert.deepEqual(operation.security, [{ AdminKey: [] }])
      for (const status of ['401', '429']) assert.ok(operation.responses[status], `${method} ${path} declares ${status}`)
    }
    for (const ref of new Set(refsOf(admin))) assert.ok(resolve(admin, ref), `${ref} resolves`)
    // A body whose every field is optional may be left out (a rejection without a reason).
    assert.equal(admin.paths['/admin/properties/{id}/reject'].post.requestBody.required, false)
    assert.equal(admin.paths['/admin/registrations/{request_code}/reject'].post.requestBody.required, true, 'a registration’s rejection says why')
    // Both retry a deadlock with the check's batches (retryingConflicts), and answer 409 if it lasts.
    for (const action of ['suspend', 'unsuspend'])
      assert.ok(admin.paths[`/admin/tenants/{tenant_id}/${action}`].post.responses['409'], `${action} declares 409`)
  })
})

describe('the headers the OpenAPI document declares', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({ RATE_LIMIT_ENABLED: 'true' })
  })
  after(() => t.close())

  const declared = (document: Json, path: string, method: string, status: string) =>
    Object.keys(answer(document, document.paths[path][method].responses[status])?.headers ?? {}).map((name) => name.toLowerCase())

  it('are the headers the service sends', async () => {
    const document = (await t.app.inject('/openapi.json')).json<Json>()
    const agency = await createTenant(t.app)
    const submit = {
      method: 'POST',
      url: '/properties',
      headers: { ...agency.headers, 'idempotency-key': 'openapi-headers-1' },
      payload: propertyBody(),
    } as const
    assert.equal((await t.app.inject(submit)).statusCode, 201)
    const replayed = await t.app.inject(submit)
    assert.equal(replayed.statusCode, 201)
    for (const name of declared(document, '/properties', 'post', '201')) assert.ok(replayed.headers[name], `POST /properties sends ${name}`)

    const catalogue = await t.app.inject('/mls/properties')
    for (const name of declared(document, '/mls/properties', 'get', '200')) assert.ok(catalogue.headers[name], `GET /mls/properties sends ${name}`)

    const missing = await t.app.inject({ url: '/properties/999999', headers: agency.headers })
    assert.equal(missing.statusCode, 404)
    for (const name of declared(document, '/properties/{id}', 'get', '404')) assert.ok(missing.headers[name], `a 404 of GET /properties/{id} sends ${name}`)
  })
})

describe('the reason codes the OpenAPI document lists', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({ MODERATION_MODE: 'manual' })
  })
  after(() => t.close())

  it('include every code the internal check and the operators give', async () => {
    const agency = await createTenant(t.app)
    const flawed: Partial<PropertySubmission>[] = [
      // No location, a zero price, floors and areas that do not add up, an e-mail in the text.
      {
        price: 0,
        location: null,
        description: 'Пишите: ivan@example.com',
        attributes: { area: '50', living_area: '40', kitchen_area: '20', floor: '10', total_floors: '5' },
      },
      // No price, and rooms on land.
      { property_type: 'Земля', price: null, attributes: { rooms: '2' } },
    ]
    const ids = []
    for (const overrides of flawed) ids.push((await submitProperty(t.app, agency, overrides)).id)
    await runInternalCheck(t.app)
    const rejected = await t.app.inject({
      method: 'POST',
      url: `/admin/properties/${ids[0]}/reject`,
      headers: { 'x-admin-key': ADMIN_KEY },
      payload: { reason: 'Нет фото' },
    })
    assert.equal(rejected.statusCode, 200, rejected.body)

    const given = new Set<string>()
    for (const id of ids) {
      const property = (await t.app.inject({ url: `/properties/${id}`, headers: agency.headers })).json<Json>()
      for (const reason of property.moderation.reasons as { code: string }[]) given.add(reason.code)
    }
    assert.ok(given.size >= 7, [...given].join(', '))
    const listed: string[] = (await t.app.inject('/openapi.json')).json<Json>().components.schemas.ModerationReasonCode.enum
    for (const code of given) assert.ok(listed.includes(code), `${code} is listed`)
  })
})
