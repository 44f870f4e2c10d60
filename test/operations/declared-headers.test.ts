import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { sql } from 'drizzle-orm'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, propertyBody, submitProperty } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import { startReceiver, subscribe } from '../helpers/webhooks.js'

/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-explicit-any */
type Json = Record<string, any>

let t: TestApp
let doc: Json
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true })
;(addFormats as unknown as (a: Ajv2020) => void)(ajv)

const resolve = (ref: string): any =>
  ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<any>((node, part) => node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')], doc)
const deref = (node: any): any => (node?.$ref ? deref(resolve(node.$ref)) : node)

const compiled = new Map<string, ReturnType<Ajv2020['compile']>>()
function validatorFor(schema: Json) {
  const key = JSON.stringify(schema)
  let v = compiled.get(key)
  if (!v) {
    v = ajv.compile(JSON.parse(key.replaceAll('"#/components/', '"doc#/components/')))
    compiled.set(key, v)
  }
  return v
}
function validateAgainst(schema: Json, value: unknown): string[] {
  const v = validatorFor(schema)
  return v(value) ? [] : (v.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`)
}

/** The operation the document declares for this method and path template. */
function operation(method: string, template: string): Json {
  const op = doc.paths[template]?.[method.toLowerCase()]
  assert.ok(op, `${method} ${template} is in the document`)
  return op
}

const NOTABLE_HEADERS = ['location', 'retry-after', 'etag', 'idempotent-replayed', 'cache-control']

/** What in this actual answer the document does not say, for this operation. */
function problems(method: string, template: string, res: LightMyRequestResponse): string[] {
  const op = operation(method, template)
  const where = `${method} ${template} → ${res.statusCode}`
  const declared = deref(op.responses[String(res.statusCode)] ?? op.responses.default)
  if (!declared) return [`${where}: status not declared (declares ${Object.keys(op.responses).join(',')}); body ${res.body.slice(0, 300)}`]
  const out: string[] = []
  const declaredHeaders = Object.keys(declared.headers ?? {}).map((h) => h.toLowerCase())
  for (const h of NOTABLE_HEADERS) {
    if (res.headers[h] !== undefined && !declaredHeaders.includes(h)) out.push(`${where}: header ${h}: ${String(res.headers[h])} not declared`)
  }
  for (const h of declaredHeaders) {
    const schema = deref(declared.headers[Object.keys(declared.headers).find((k) => k.toLowerCase() === h)!])?.schema
    const value = res.headers[h]
    if (value === undefined || !schema) continue
    const parsed = schema.type === 'integer' ? Number(value) : value
    const errors = validateAgainst(schema, parsed)
    if (errors.length) out.push(`${where}: header ${h}=${String(value)} violates its schema: ${errors.join('; ')}`)
  }
  if (res.body.length > 0 && String(res.headers['content-type'] ?? '').includes('json')) {
    const schema = declared.content?.['application/json']?.schema
    if (!schema) out.push(`${where}: JSON body but no application/json content declared`)
    else {
      const errors = validateAgainst(schema, res.json())
      if (errors.length) out.push(`${where}: body violates schema: ${errors.join('; ')}; body ${res.body.slice(0, 400)}`)
    }
  }
  return out
}

/** Asserts that the actual answer is one the document declares, headers and body included. */
function conforms(method: string, template: string, res: LightMyRequestResponse) {
  assert.deepEqual(problems(method, template, res), [], `${method} ${template}: ${res.statusCode}`)
}

before(async () => {
  t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true' })
  doc = (await t.app.inject('/openapi.json')).json()
  ajv.addSchema({ $id: 'doc', components: doc.components })
})
after(() => t?.close())

/**
 * The headers an answer carries are the ones the OpenAPI document declares for its status: a
 * client that keeps the last ETag for If-None-Match, or a cache layer generated from the document,
 * is told the truth. The catalogue's ETag is on its 200s (and 304s) only; no-store is declared
 * where it is sent.
 */
describe('the headers of answers, as the OpenAPI document declares them', () => {
  it('declares every header of the catalogue error answers (no undeclared ETag on 422)', async () => {
    for (const [template, url] of [
      ['/mls/properties', '/mls/properties?limit=0'],
      ['/mls/clusters', '/mls/clusters?zoom=3'],
      ['/mls/properties/{id}', '/mls/properties/abc'],
    ] as const) {
      const res = await t.app.inject({ method: 'GET', url })
      assert.equal(res.statusCode, 422, res.body)
      conforms('GET', template, res)
    }
  })

  it('declares every header of the catalogue 429 (no undeclared ETag)', async () => {
    const limited = await buildTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_CATALOGUE_PER_MINUTE: '1' })
    try {
      await limited.app.inject({ method: 'GET', url: '/mls/properties' })
      const res = await limited.app.inject({ method: 'GET', url: '/mls/properties' })
      assert.equal(res.statusCode, 429, res.body)
      conforms('GET', '/mls/properties', res)
    } finally {
      await limited.close()
    }
  })

  it('declares the Cache-Control the changes feed sends', async () => {
    const a = await createTenant(t.app)
    await submitProperty(t.app, a)
    await runInternalCheck(t.app)
    const page = await t.app.inject({ method: 'GET', url: '/mls/changes', headers: a.headers })
    assert.equal(page.statusCode, 200, page.body)
    conforms('GET', '/mls/changes', page)
    const snapshot = await t.app.inject({ method: 'GET', url: '/mls/changes/snapshot', headers: a.headers })
    assert.equal(snapshot.statusCode, 200, snapshot.body)
    conforms('GET', '/mls/changes/snapshot', snapshot)
  })

  it('declares the Cache-Control of the registration status 404', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/tenants/register/reg_doesnotexist00000000?email=x@example.com' })
    assert.equal(res.statusCode, 404, res.body)
    conforms('GET', '/tenants/register/{request_code}', res)
  })
})

/** What the service shows back, as the document types it: a client generated from it takes every answer. */
describe('the bodies of answers, as the OpenAPI document declares them', () => {
  it('types a webhook log entry’s ids as the bigint counters they are, past 2^31', async () => {
    // A long-lived MLS: every listing's events go to every agency subscribed, so these pass 2^31.
    await t.db.execute(sql`alter table events alter column id restart with 3000000000`)
    await t.db.execute(sql`alter table webhook_attempts alter column id restart with 3000000000`)
    const owner = await createTenant(t.app)
    const receiver = await startReceiver()
    try {
      const subscription = await subscribe(t.app, owner, { url: receiver.url, events: ['property.published'] })
      const test = await t.app.inject({ method: 'POST', url: `/webhooks/${subscription.id}/test`, headers: owner.headers })
      assert.equal(test.json<Json>().event_id, 3000000000, test.body)
      conforms('POST', '/webhooks/{id}/test', test)
      conforms('GET', '/webhooks/{id}/logs', await t.app.inject({ url: `/webhooks/${subscription.id}/logs`, headers: owner.headers }))
    } finally {
      await receiver.close()
    }
  })

  it('shows a URL as the agency gave it, a blank in its path or a host in Cyrillic, within its documented type', async () => {
    const owner = await createTenant(t.app)
    const receiver = await startReceiver()
    try {
      const created = await t.app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: owner.headers,
        payload: { url: `${receiver.url}/new listings`, events: ['mls.new_listing'] },
      })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.json<Json>().url, `${receiver.url}/new listings`)
      conforms('POST', '/webhooks', created)
      conforms('GET', '/webhooks/{id}', await t.app.inject({ url: created.headers.location!, headers: owner.headers }))
      // Not resolved here: private addresses are allowed in this app, so the name is not looked up.
      const cyrillic = await t.app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: owner.headers,
        payload: { url: 'http://пример.рф/hooks', events: ['mls.new_listing'] },
      })
      assert.equal(cyrillic.statusCode, 201, cyrillic.body)
      conforms('POST', '/webhooks', cyrillic)
    } finally {
      await receiver.close()
    }
  })
})

/**
 * A request of the agency's let in just before its suspension committed reaches a listing the
 * suspension holds (docs/api.md#suspension: an edit, a status move or a deletion answers 409).
 * As test/properties/decisions-edges.test.ts does, the suspension's hold is written directly,
 * as if it had committed while the request was on its way.
 */
describe('answers about a listing held by its agency’s suspension, as the OpenAPI document declares them', () => {
  let agency: Awaited<ReturnType<typeof createTenant>>
  const hold = (id: number) => t.db.execute(sql`update properties set status_id = 4, held_status_id = 2 where id = ${id}::int`)
  before(async () => {
    agency = await createTenant(t.app)
  })

  it('declares the 409 of a deletion, by id and by external id', async () => {
    const { id } = await submitProperty(t.app, agency)
    const put = await t.app.inject({ method: 'PUT', url: '/properties/by-external-id/CRM-held-1', headers: agency.headers, payload: propertyBody() })
    assert.equal(put.statusCode, 201, put.body)
    await runInternalCheck(t.app)
    await hold(id)
    await hold(put.json<{ id: number }>().id)
    const byId = await t.app.inject({ method: 'DELETE', url: `/properties/${id}`, headers: agency.headers })
    assert.equal(byId.statusCode, 409, byId.body)
    conforms('DELETE', '/properties/{id}', byId)
    const byExternalId = await t.app.inject({ method: 'DELETE', url: '/properties/by-external-id/CRM-held-1', headers: agency.headers })
    assert.equal(byExternalId.statusCode, 409, byExternalId.body)
    conforms('DELETE', '/properties/by-external-id/{external_id}', byExternalId)
  })

  it('answers a status move with the StatusConflict its 409 declares: no move allowed while held', async () => {
    const { id } = await submitProperty(t.app, agency)
    await runInternalCheck(t.app)
    await hold(id)
    const res = await t.app.inject({ method: 'POST', url: `/properties/${id}/status`, headers: agency.headers, payload: { status_id: 1 } })
    assert.equal(res.statusCode, 409, res.body)
    conforms('POST', '/properties/{id}/status', res)
    assert.deepEqual(res.json<{ allowed_moves: number[] }>().allowed_moves, [])
  })
})
