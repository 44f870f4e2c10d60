import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { INVALID_API_KEY } from '../../src/lib/errors.js'
import type { FeedRunSummary } from '../../src/modules/feeds/feeds.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { createFeed } from '../helpers/feeds.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { JsonSchema, OpenApiDocument, OpenApiOperation } from '../helpers/openapi.js'
import { photo, upload } from '../helpers/photos.js'
import { subscribe } from '../helpers/webhooks.js'

// Tenant isolation, generated from the public OpenAPI document: every operation with an id in
// its path is tried against a fresh owner's resource with five kinds of credential. A route
// added later is tried without touching this file; one whose resource this file cannot make
// fails below, naming the collection to teach it.

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const
type Method = (typeof METHODS)[number]

interface Operation {
  method: Method
  path: string
  operation: OpenApiOperation
}

const UNAUTHORIZED = JSON.stringify({ detail: INVALID_API_KEY })

/**
 * Operations whose path names the resource by the caller's own key, creating it when the caller
 * has none: another tenant's PUT of the owner's key writes that tenant's own resource, exactly
 * as for a key nobody has, and never touches the owner's.
 */
const UPSERTS_BY_OWN_KEY = new Set(['put /properties/by-external-id/{external_id}'])

/** The external ids of holdings, unique (another tenant with the same one would find its own), with characters a path must encode. */
let holdingsMade = 0
const holdingExternalId = () => `CRM ${++holdingsMade}/Ж`

let missingCodes = 0
/**
 * An id no row has: the largest value the path parameter's schema admits, or a made-up code, a
 * new one each time (a PUT by the caller's own key creates what it names).
 */
function missingId(schema: JsonSchema): string {
  return schema.type === 'integer' ? String(schema.maximum ?? 2_147_483_647) : `missing-${String(++missingCodes).padStart(10, '0')}`
}

/** What a tenant owns, made fresh for each operation, so that one operation's DELETE cannot spoil the next. */
interface Holdings {
  owner: Tenant
  /** The owner's resources by collection path: `/properties` → a property id. */
  ids: Record<string, string>
  /** A key of the owner's that has been revoked. */
  revokedKey: string
}

describe('tenant isolation on every operation with an id in its path', () => {
  let t: TestApp
  let stranger: Tenant
  let operations: Operation[]
  let document: OpenApiDocument

  before(async () => {
    // Test sends go to a closed local port: the attempt fails at once and is logged.
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true' })
    document = (await t.app.inject('/openapi.json')).json<OpenApiDocument>()
    operations = Object.entries(document.paths).flatMap(([path, item]) =>
      METHODS.filter((method) => item[method]).map((method) => ({ method, path, operation: item[method]! })),
    )
    // The other tenant has resources of its own, so "not found" is not "has nothing".
    stranger = (await holdingsOf(t.app)).owner
  })
  after(() => t.close())

  it('covers the tenant routes that take an id', () => {
    const covered = operations.filter(isTenantOperationWithId).map(({ method, path }) => `${method} ${path}`)
    for (const expected of [
      'get /properties/{id}',
      'patch /properties/{id}',
      'delete /properties/{id}',
      'delete /webhooks/{id}',
      'patch /feeds/{id}',
      'get /feeds/{id}/runs/{run_id}',
      'put /property-images/{image_id}',
      'get /properties/by-external-id/{external_id}',
      'put /properties/by-external-id/{external_id}',
      'delete /properties/by-external-id/{external_id}',
    ]) {
      assert.ok(covered.includes(expected), `${expected} is among ${covered.join(', ')}`)
    }
  })

  it('lets the owner in, answers another tenant as if the id did not exist, and refuses every bad key alike', async () => {
    for (const operation of operations.filter(isTenantOperationWithId)) {
      const where = `${operation.method.toUpperCase()} ${operation.path}`
      const holdings = await holdingsOf(t.app)
      const url = urlFor(operation, holdings.ids)
      const before = await snapshot(t.app, operations, holdings)

      const asStranger = await send(t.app, document, operation, url, stranger.apiKey)
      const missing = await send(t.app, document, operation, urlFor(operation, holdings.ids, true), stranger.apiKey)
      if (UPSERTS_BY_OWN_KEY.has(`${operation.method} ${operation.path}`)) {
        for (const answer of [asStranger, missing]) {
          assert.equal(answer.statusCode, 201, `${where} as another tenant creates its own: ${answer.body}`)
          const { id } = answer.json<{ id: number }>()
          assert.notEqual(String(id), holdings.ids['/properties'])
          const own = await t.app.inject({ url: `/properties/${id}`, headers: { 'x-api-key': stranger.apiKey } })
          assert.equal(own.statusCode, 200, `${where}: what it wrote is the other tenant's`)
        }
      } else {
        assert.equal(asStranger.statusCode, 404, `${where} as another tenant: ${asStranger.body}`)
        assert.equal(asStranger.headers['content-type'], missing.headers['content-type'], `${where}: the same content type as a missing id`)
        assert.equal(asStranger.body, missing.body, `${where}: the same body as a missing id`)
        // A whole number no id can be is as missing as any other (interface §7: "not found").
        if (pathParameters(operation).every((parameter) => parameter.schema.type === 'integer')) {
          for (const impossible of ['0', '-1', '2147483648']) {
            const answer = await send(t.app, document, operation, urlFor(operation, holdings.ids, impossible), stranger.apiKey)
            assert.equal(answer.statusCode, 404, `${where} with the id ${impossible}: ${answer.body}`)
            assert.equal(answer.body, missing.body, `${where} with the id ${impossible}: the same body as a missing id`)
          }
        }
      }

      for (const [who, key] of [
        ['no key', undefined],
        ['a wrong key', `${holdings.owner.apiKey.slice(0, -4)}0000`],
        ['a revoked key', holdings.revokedKey],
      ] as const) {
        const refused = await send(t.app, document, operation, url, key)
        assert.equal(refused.statusCode, 401, `${where} with ${who}: ${refused.body}`)
        assert.equal(refused.body, UNAUTHORIZED, `${where} with ${who}`)
      }

      assert.deepEqual(await snapshot(t.app, operations, holdings), before, `${where}: the owner's data is unchanged by the others`)

      const asOwner = await send(t.app, document, operation, url, holdings.owner.apiKey)
      assert.ok(asOwner.statusCode >= 200 && asOwner.statusCode < 300, `${where} as the owner: ${asOwner.statusCode} ${asOwner.body}`)
    }
  })
})

function isTenantOperationWithId({ path, operation }: Operation): boolean {
  return path.includes('{') && (operation.security ?? []).some((requirement) => 'ApiKey' in requirement)
}

/**
 * A tenant with one of everything: a published listing with an external id, a photo and a
 * revision waiting for the check, a subscription, a feed with a finished run, a spare key and a
 * revoked one.
 */
async function holdingsOf(app: FastifyInstance): Promise<Holdings> {
  const owner = await createTenant(app)
  const externalId = holdingExternalId()
  const property = await submitProperty(app, owner)
  await runInternalCheck(app)
  const revised = await app.inject({
    method: 'PATCH',
    url: `/properties/${property.id}`,
    headers: owner.headers,
    payload: { price: 7_500_000, external_id: externalId },
  })
  assert.equal(revised.statusCode, 200, revised.body)
  const uploaded = await upload(app, owner, { file: await photo('jpeg'), fields: { property_id: String(property.id) } })
  assert.equal(uploaded.statusCode, 201, uploaded.body)
  const subscription = await subscribe(app, owner, { url: 'http://127.0.0.1:9/hooks', events: ['property.published'] })
  const feed = await createFeed(app, owner, { url: 'http://127.0.0.1:9/feed.xml' })
  const run = await finishedRunOf(app, owner, feed.id)
  const spare = await issueKey(app, owner)
  const revoked = await issueKey(app, owner)
  const revocation = await app.inject({ method: 'DELETE', url: `/tenants/me/api-keys/${revoked.id}`, headers: owner.headers })
  assert.equal(revocation.statusCode, 204, revocation.body)
  return {
    owner,
    ids: {
      '/properties': String(property.id),
      '/properties/by-external-id': encodeURIComponent(externalId),
      '/property-images': String(uploaded.json<{ id: number }>().id),
      '/webhooks': String(subscription.id),
      '/feeds': String(feed.id),
      '/feeds/{id}/runs': String(run.id),
      '/tenants/me/api-keys': String(spare.id),
    },
    revokedKey: revoked.key,
  }
}

async function issueKey(app: FastifyInstance, owner: Tenant): Promise<{ id: number; key: string }> {
  const response = await app.inject({ method: 'POST', url: '/tenants/me/api-keys', headers: owner.headers, payload: {} })
  assert.equal(response.statusCode, 201, response.body)
  return response.json<{ id: number; key: string }>()
}

function pathParameters({ operation }: Operation) {
  return (operation.parameters ?? []).filter((candidate) => candidate.in === 'path')
}

/**
 * The path with its ids filled in from the owner's holdings, or with ids nobody has (`true`),
 * or all with the value given.
 */
function urlFor(operation: Operation, ids: Record<string, string>, missing: boolean | string = false): string {
  let url = operation.path
  // Each id is the owner's resource in the collection its path leads to (`/feeds`, then `/feeds/{id}/runs`).
  for (const parameter of pathParameters(operation)) {
    const collection = operation.path.slice(0, operation.path.indexOf(`/{${parameter.name}}`))
    const id = ids[collection]
    assert.ok(id, `the test makes no resource for ${collection}; add one to holdingsOf`)
    url = url.replace(`{${parameter.name}}`, typeof missing === 'string' ? missing : missing ? missingId(parameter.schema) : id)
  }
  return url
}

/**
 * A run of the feed, carried out to its end (its address answers nothing: it fails at once), so
 * the owner may start another. Runs left running by earlier operations are carried out first.
 */
async function finishedRunOf(app: FastifyInstance, owner: Tenant, feedId: number): Promise<FeedRunSummary> {
  const started = await app.inject({ method: 'POST', url: `/feeds/${feedId}/runs`, headers: owner.headers })
  assert.equal(started.statusCode, 202, started.body)
  for (let run = await app.services.feeds.claimRun('isolation-test'); run; run = await app.services.feeds.claimRun('isolation-test')) {
    await app.services.feeds.execute(run, 'isolation-test')
  }
  return started.json<FeedRunSummary>()
}

/** The operation with its documented example body (or a minimal one built from the schema). */
function send(
  app: FastifyInstance,
  document: OpenApiDocument,
  { method, operation }: Operation,
  url: string,
  apiKey: string | undefined,
): Promise<LightMyRequestResponse> {
  const content = operation.requestBody?.content['application/json']
  const schema = content && followRef(document, content.schema)
  const payload = content && schema ? (content.example ?? schema.examples?.[0] ?? minimalBody(document, schema)) : undefined
  return app.inject({
    method: method.toUpperCase() as Uppercase<Method>,
    url,
    headers: apiKey === undefined ? {} : { 'x-api-key': apiKey },
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  })
}

function followRef(document: OpenApiDocument, schema: JsonSchema): JsonSchema {
  return schema.$ref ? document.components.schemas[schema.$ref.replace('#/components/schemas/', '')]! : schema
}

function minimalBody(document: OpenApiDocument, unresolved: JsonSchema): unknown {
  const schema = followRef(document, unresolved)
  if (schema.enum) return schema.enum[0]
  if (schema.type === 'object') {
    return Object.fromEntries((schema.required ?? []).map((name) => [name, minimalBody(document, schema.properties![name]!)]))
  }
  if (schema.type === 'integer' || schema.type === 'number') return schema.minimum ?? 0
  if (schema.type === 'boolean') return false
  if (schema.type === 'array') return []
  return 'x'
}

/**
 * Everything the owner can read: every parameterless tenant GET, and every GET of an id route
 * on the owner's resources. `last_used_at` moves when the owner's own key is used, so it is
 * left out.
 */
async function snapshot(app: FastifyInstance, operations: Operation[], holdings: Holdings): Promise<unknown[]> {
  const reads = operations.filter(
    ({ method, path, operation }) => method === 'get' && (operation.security ?? []).some((requirement) => 'ApiKey' in requirement) && !path.includes('{'),
  )
  const detailReads = operations.filter((operation) => operation.method === 'get' && isTenantOperationWithId(operation))
  const urls = [...reads.map(({ path }) => path), ...detailReads.map((operation) => urlFor(operation, holdings.ids))]
  const answers = await Promise.all(urls.map((url) => app.inject({ method: 'GET', url, headers: holdings.owner.headers })))
  return answers.map((answer, index) => ({ url: urls[index], status: answer.statusCode, body: withoutUsage(JSON.parse(answer.body)) }))
}

function withoutUsage(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutUsage)
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).flatMap(([key, inner]) => (key === 'last_used_at' ? [] : [[key, withoutUsage(inner)]])))
  }
  return value
}
