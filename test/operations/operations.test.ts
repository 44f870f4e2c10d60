import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import Fastify from 'fastify'
import docsPlugin from '../../src/plugins/docs.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import type { OpenApiDocument } from '../helpers/openapi.js'
import type { ErrorBody, HealthStatus, ServiceIndex } from '../helpers/responses.js'

describe('operations and HTTP conventions', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  it('answers GET / with the service, its version and where its documentation is', async () => {
    const response = await t.app.inject('/')
    assert.equal(response.statusCode, 200)
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
    assert.deepEqual(response.json<ServiceIndex>(), {
      name: 'Open MLS',
      version,
      description: 'An open multiple listing service for real-estate agencies.',
      links: { docs: 'http://mls.test/docs', openapi: 'http://mls.test/openapi.json' },
    })
    assert.equal((await t.app.inject(response.json<ServiceIndex>().links.openapi.replace('http://mls.test', ''))).statusCode, 200)
  })

  it('answers /healthz and /readyz', async () => {
    assert.deepEqual((await t.app.inject('/healthz')).json<HealthStatus>(), { status: 'ok' })
    const ready = await t.app.inject('/readyz')
    assert.equal(ready.statusCode, 200)
    assert.deepEqual(ready.json<HealthStatus>(), { status: 'ready' })
  })

  it('documents a route that has no schema too', async () => {
    // Every route of the service has one; a route added without must not break /openapi.json.
    const app = Fastify()
    app.decorate('config', t.config)
    await app.register(docsPlugin)
    app.get('/plain', async () => 'plain')
    try {
      const response = await app.inject('/openapi.json')
      assert.equal(response.statusCode, 200, response.body)
      assert.ok(response.json<OpenApiDocument>().paths['/plain']?.get)
    } finally {
      await app.close()
    }
  })

  it('publishes a complete OpenAPI 3.1 document', async () => {
    const response = await t.app.inject('/openapi.json')
    assert.equal(response.statusCode, 200)
    const document = response.json<OpenApiDocument>()
    assert.equal(document.openapi, '3.1.0')
    const expected: [string, string][] = [
      ['/tenants/register', 'post'],
      ['/tenants/register/{request_code}', 'get'],
      ['/tenants/me', 'get'],
      ['/property-types', 'get'],
      ['/deal-types', 'get'],
      ['/property-statuses', 'get'],
      ['/cities', 'get'],
      ['/districts', 'get'],
      ['/residential-complexes', 'get'],
      ['/attributes', 'get'],
      ['/healthz', 'get'],
      ['/readyz', 'get'],
      ['/properties', 'post'],
      ['/properties', 'get'],
      ['/properties/{id}', 'get'],
      ['/properties/{id}', 'patch'],
      ['/properties/{id}', 'delete'],
      ['/properties/{id}/status', 'post'],
      ['/mls/properties', 'get'],
      ['/mls/properties/{id}', 'get'],
      ['/property-images', 'get'],
      ['/property-images', 'post'],
      ['/property-images/upload', 'post'],
      ['/property-images/{image_id}', 'get'],
      ['/property-images/{image_id}', 'put'],
      ['/property-images/{image_id}', 'delete'],
      ['/webhooks', 'post'],
      ['/webhooks', 'get'],
      ['/webhooks/{id}', 'delete'],
      ['/webhooks/{id}/test', 'post'],
      ['/webhooks/{id}/logs', 'get'],
    ]
    for (const [path, method] of expected) {
      const operation = document.paths[path]?.[method]
      assert.ok(operation, `${method} ${path} is documented`)
      assert.ok(operation.summary, `${method} ${path} has a summary`)
    }
    assert.deepEqual(document.paths['/tenants/me']!.get!.security, [{ ApiKey: [] }])
    assert.equal(document.components.securitySchemes.ApiKey!.name, 'x-api-key')
    const register = document.paths['/tenants/register']!.post!
    assert.ok(register.responses['201'] && register.responses['422'] && register.responses['429'])
    assert.equal(register.requestBody!.content['application/json']!.schema.$ref, '#/components/schemas/RegistrationRequest')
    assert.ok(document.components.schemas.RegistrationRequest!.examples![0])
    assert.equal(document.paths['/openapi.json'], undefined)
    assert.deepEqual(document.paths['/properties']!.post!.security, [{ ApiKey: [] }])
    assert.equal(document.paths['/mls/properties']!.get!.security, undefined)
    assert.deepEqual(document.components.schemas.PropertyTypeName!.enum, ['Квартира', 'Дом', 'Таунхаус', 'Коммерция', 'Земля'])
    // Every query parameter of a list is optional; limit and offset have their defaults.
    type Parameter = { name: string; in: string; required?: boolean; schema: { default?: unknown } }
    for (const path of ['/properties', '/mls/properties', '/webhooks/{id}/logs']) {
      const query = (document.paths[path]!.get!.parameters as Parameter[]).filter((parameter) => parameter.in === 'query')
      assert.deepEqual(
        query.filter((parameter) => parameter.required).map((parameter) => parameter.name),
        [],
        `${path}: no required query parameter`,
      )
      const byName = new Map(query.map((parameter) => [parameter.name, parameter]))
      assert.equal(byName.get('limit')?.schema.default, 50, path)
      assert.equal(byName.get('offset')?.schema.default, 0, path)
    }
    // The catalogue's answers are conditional, and say so.
    for (const path of ['/mls/properties', '/mls/properties/{id}']) {
      const operation = document.paths[path]!.get!
      assert.ok(
        (operation.parameters as Parameter[]).some((parameter) => parameter.in === 'header' && parameter.name === 'if-none-match'),
        path,
      )
      assert.ok(operation.responses['200']!.headers!.ETag && operation.responses['200']!.headers!['Cache-Control'], path)
      assert.ok(operation.responses['304'], path)
    }
  })

  it('serves the interactive reference at /docs', async () => {
    const response = await t.app.inject('/docs/')
    assert.equal(response.statusCode, 200)
    assert.match(response.headers['content-type'] as string, /text\/html/)
  })

  it('answers unknown routes with a JSON 404', async () => {
    const response = await t.app.inject({ method: 'DELETE', url: '/nowhere?x=1' })
    assert.equal(response.statusCode, 404)
    assert.deepEqual(response.json<ErrorBody>(), { detail: 'There is no DELETE /nowhere route.' })
  })

  it('echoes the caller’s X-Request-Id, or makes one', async () => {
    const given = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'trace-123' } })
    assert.equal(given.headers['x-request-id'], 'trace-123')
    const made = await t.app.inject('/healthz')
    assert.match(made.headers['x-request-id'] as string, /^[0-9a-f-]{36}$/)
  })
})

describe('PUBLIC_BASE_URL with a path (the service behind a gateway at /mls)', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({ PUBLIC_BASE_URL: 'https://gateway.example/mls' })
  })
  after(() => t.close())

  it('gives a created resource’s Location under the base’s path, as a client resolves it', async () => {
    const index = await t.app.inject({ method: 'GET', url: '/' })
    assert.equal(index.json<ServiceIndex>().links.docs, 'https://gateway.example/mls/docs')
    const registered = await t.app.inject({
      method: 'POST',
      url: '/tenants/register',
      payload: { company_name: 'Агентство за шлюзом', email: 'gateway@agency.example' },
    })
    assert.equal(registered.statusCode, 201, registered.body)
    const code = registered.json<{ request_code: string }>().request_code
    // Where a client that called https://gateway.example/mls/tenants/register goes next.
    const next = new URL(String(registered.headers.location), 'https://gateway.example/mls/tenants/register').href
    assert.equal(next, `https://gateway.example/mls/tenants/register/${code}`)
    const lookup = await t.app.inject({ method: 'GET', url: `${new URL(next).pathname.replace(/^\/mls/, '')}?email=gateway@agency.example` })
    assert.equal(lookup.statusCode, 200, lookup.body)
  })
})

describe('unexpected errors', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  it('hide the message of a bug behind a 500 and map an unreachable database to 503', async () => {
    // Routes only a test adds, to make the app fail the ways production code can.
    const { buildApp } = await import('../../src/app.js')
    const app = await buildApp({ config: t.config, database: t.database.handle, logger: false })
    app.get('/test/bug', async () => {
      throw new Error('secret internal state: password=hunter2')
    })
    app.get('/test/database-down', async () => {
      // As node-postgres fails when nothing listens: Node's system error, with its syscall.
      const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect' })
      throw new Error('Failed query', { cause: refused })
    })
    await app.ready()
    try {
      const bug = await app.inject('/test/bug')
      assert.equal(bug.statusCode, 500)
      assert.deepEqual(bug.json<ErrorBody>(), { detail: 'Something went wrong on our side; the error has been logged.' })
      assert.ok(!bug.body.includes('hunter2'))

      const down = await app.inject('/test/database-down')
      assert.equal(down.statusCode, 503)
      assert.equal(down.headers['retry-after'], '5')
      assert.ok(!down.body.includes('5432'))
    } finally {
      await app.close()
    }
  })
})
