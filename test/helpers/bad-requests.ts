import fc from 'fast-check'
import type { JsonSchema, OpenApiDocument, OpenApiOperation, OpenApiParameter } from './openapi.js'

/**
 * Generators of bad requests (fast-check arbitraries) built from an OpenAPI document: for an
 * operation, its path with odd or valid values in place of its parameters, a query string of
 * declared and undeclared names, headers, and a body that is a valid one mutated, broken JSON,
 * a broken multipart form or bytes. What is generated stays on this machine: URLs in bodies are
 * loopback, private or `.invalid` addresses, which the service refuses without a connection.
 */

/** The methods requests are sent with: every operation's, and the others a route may be asked with. */
export type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS'

/** A request as `app.inject` takes it. */
export interface FuzzRequest {
  method: Method
  url: string
  headers: Record<string, string>
  payload?: string | Buffer
}

/** What the generators may put where a valid value belongs: ids, codes and keys that exist. */
export interface Fixtures {
  document: OpenApiDocument
  /** Valid values of path parameters, by name (`id`, `image_id`, `request_code`). */
  pathValues: Record<string, string[]>
  /** Valid values of query parameters and form fields, by name, beyond what schemas say (`email`, `property_id`). */
  fieldValues: Record<string, string[]>
  /** The header and key each security scheme takes: `{ApiKey: ['x-api-key', key]}`. */
  credentials: Record<string, [string, string]>
  /** A small JPEG, for multipart forms. */
  photo: Buffer
}

export interface Operation {
  method: Method
  path: string
  operation: OpenApiOperation
}

export function operationsOf(document: OpenApiDocument): Operation[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ method: method.toUpperCase() as Method, path, operation })),
  )
}

/** A fast-check print of a request with its long strings cut, so that a failure's report stays readable. */
export function describeRequest(request: FuzzRequest): string {
  const cut = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}… (${text.length} characters)` : text)
  const payload =
    request.payload === undefined
      ? ''
      : Buffer.isBuffer(request.payload)
        ? ` <${request.payload.length} bytes> ${JSON.stringify(cut(request.payload.toString('latin1')))}`
        : ` ${JSON.stringify(cut(request.payload))}`
  return `${request.method} ${cut(request.url)} ${JSON.stringify(request.headers, (_key, value: unknown) => (typeof value === 'string' ? cut(value) : value))}${payload}`
}

// Special numbers JSON.stringify cannot write travel as marked strings and are put in the text afterwards.
const NUMBER_MARK = '\u0001number:'
const rawNumber = (text: string) => `${NUMBER_MARK}${text}`
function toJsonText(value: unknown): string {
  return JSON.stringify(value).replace(/"\\u0001number:([^"]*)"/g, '$1')
}

const HUGE_STRING = 'я'.repeat(600_000) // 1.2 MB of UTF-8: past the 1 MiB body limit
const LONG_STRING = 'x'.repeat(20_000)

/** Values that are wrong, or odd, almost anywhere. */
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    null,
    true,
    false,
    0,
    -1,
    -0,
    1.5,
    2 ** 31,
    -(2 ** 31) - 1,
    2 ** 53 + 2,
    1e308,
    -1e308,
    Number.MIN_VALUE,
    rawNumber('1e309'),
    rawNumber('-1e309'),
    rawNumber('1e-400'),
    rawNumber('123456789012345678901234567890'),
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udfffy',
    '\ufeff',
    '\u202e\u0000',
    '1e309',
    'NaN',
    'Infinity',
    '-1',
    '0x10',
    '٣',
    '🏠🏠',
    'Иван',
    '<script>alert(1)</script>',
    "' or 1=1 --",
    '%00',
    '../../etc/passwd',
    LONG_STRING,
    HUGE_STRING,
    [],
    {},
    [null],
    [[[[[]]]]],
    { '': null },
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.jsonValue({ maxDepth: 2 }),
)

/** Keys a body should not have, or that mean something to JavaScript. */
const oddKey = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'tenant_id',
    'status_id',
    'id',
    '',
    ' ',
    '\u0000',
    '\ud800',
    'a.b',
    '$where',
  ),
  fc.string({ maxLength: 12 }),
)

/** JSON texts that are broken, deep, huge or odd as a whole. */
const oddJsonText: fc.Arbitrary<string> = fc.constantFrom(
  '',
  ' ',
  '\n',
  'null',
  'true',
  '0',
  '-0',
  '"text"',
  '[]',
  '{}',
  '{',
  '}',
  '{"a":',
  '{"a":1,}',
  "{'a':1}",
  '{"a":1}{"b":2}',
  '{"a":1} trailing',
  '{"a":1,"a":2}',
  '\ufeff{}',
  '\ufeff\ufeff{}',
  'NaN',
  'Infinity',
  '1e309',
  '-1e309',
  '{"price":1e309}',
  '{"price":-1e309,"status_id":1e309,"sort_order":1e309,"property_id":1e309}',
  '{"x":"\\ud800"}',
  '{"x":"\\u0000"}',
  '{"x":"\\u"}',
  '{"__proto__":{"admin":true}}',
  '{"constructor":{"prototype":{"admin":true}}}',
  '{"__proto__":null}',
  `${'['.repeat(10_000)}${']'.repeat(10_000)}`,
  `${'['.repeat(10_000)}"\\u0000"${']'.repeat(10_000)}`,
  `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`,
  `${'{"a":['.repeat(3_000)}null${']}'.repeat(3_000)}`,
  '['.repeat(100_000),
  `{"description":"${HUGE_STRING}"}`,
  `[${'1,'.repeat(200_000)}1]`,
  `{${Array.from({ length: 20_000 }, (_, i) => `"k${i}":1`).join(',')}}`,
)

const contentTypes = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'APPLICATION/JSON',
  'application/json;',
  'application/json, text/plain',
  'application/problem+json',
  'application/jsonx',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'application/octet-stream',
  'multipart/form-data',
  'multipart/form-data; charset=utf-8',
  'multipart/form-data; boundary=fuzz',
  'multipart/mixed; boundary=fuzz',
  '*/*',
  '',
  ';',
  'a/b/c',
)

/** Path segments that are odd, malformed or out of range, already in URL form. */
const oddSegment = fc.oneof(
  fc.constantFrom(
    '%00',
    '..',
    '.',
    '%2e%2e',
    '%2E%2E%2F%2E%2E',
    '%2F',
    '%5C',
    '%',
    '%%',
    '%G0',
    '%FF',
    '%C3%28',
    '%E0%A4%A',
    '%ED%A0%80',
    '%F0%9F%8F%A0',
    encodeURIComponent('пример'),
    'пример',
    '🏠',
    '-1',
    '0',
    '-0',
    '00001',
    '1.5',
    '1e3',
    '1e309',
    '0x10',
    '%201',
    '1%20',
    '+1',
    '2147483647',
    '2147483648',
    '9007199254740993',
    '99999999999999999999999999',
    'null',
    'undefined',
    'true',
    '[]',
    '%7B%7D',
    '__proto__',
    'constructor',
    'reg_',
    'reg_%00',
    '%0d%0aX-Injected:%201',
    `${'9'.repeat(120)}`,
    'a'.repeat(200),
    'a'.repeat(5_000),
  ),
  fc.string({ unit: 'grapheme', maxLength: 30 }).map(encodeURIComponent),
  fc.integer().map(String),
)

/** What may follow a path: nothing mostly, sometimes a trailing oddity. */
const pathTail = fc.oneof(
  { weight: 8, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constantFrom('/', '//', '/..', '/.', '/%2e%2e', '/%00', '%00', ';a=b', '%20', '/extra', '#fragment', '.json') },
)

function resolve(schema: JsonSchema, document: OpenApiDocument): JsonSchema {
  let current = schema
  for (let depth = 0; current.$ref && depth < 10; depth++) {
    current = document.components.schemas[current.$ref.replace('#/components/schemas/', '')] ?? {}
  }
  return current
}

type Bounds = JsonSchema & { minimum?: number; maximum?: number; minItems?: number; maxItems?: number; additionalProperties?: JsonSchema | boolean }

/** A value that the schema likely takes: the start of most bodies, before they are mutated. */
function plausibleValue(schema: JsonSchema, document: OpenApiDocument, depth = 0): fc.Arbitrary<unknown> {
  const resolved = resolve(schema, document) as Bounds
  if (resolved.examples?.length) return fc.constantFrom(...resolved.examples)
  if (resolved.enum?.length) return fc.constantFrom(...resolved.enum)
  const branches = resolved.anyOf ?? resolved.oneOf
  if (branches?.length) return fc.oneof(...branches.map((branch) => plausibleValue(branch, document, depth + 1)))
  const type = Array.isArray(resolved.type) ? resolved.type[0] : resolved.type
  const low = Math.max(resolved.minimum ?? -1000, -1000)
  const high = Math.min(resolved.maximum ?? 1_000_000, 1_000_000)
  switch (type) {
    case 'integer':
      return fc.integer({ min: Math.ceil(low), max: Math.max(Math.ceil(low), Math.floor(high)) })
    case 'number':
      return fc.double({ min: low, max: Math.max(low, high), noNaN: true, noDefaultInfinity: true })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'string':
      return resolved.format === 'email' ? fc.constantFrom('fuzz@example.com', 'a@b.invalid') : fc.string({ minLength: 1, maxLength: 20 })
    case 'array':
      if (depth > 4 || !resolved.items) return fc.constant([])
      return fc.array(plausibleValue(resolved.items, document, depth + 1), {
        minLength: resolved.minItems ?? 0,
        maxLength: Math.min(resolved.maxItems ?? 3, 3),
      })
    case 'object': {
      if (depth > 4) return fc.constant({})
      const properties = Object.entries(resolved.properties ?? {})
      const required = new Set(resolved.required ?? [])
      return fc.record(Object.fromEntries(properties.map(([name, property]) => [name, plausibleValue(property, document, depth + 1)])), {
        requiredKeys: properties.map(([name]) => name).filter((name) => required.has(name)),
      })
    }
    default:
      return oddValue
  }
}

/**
 * Addresses a body may name (a photo's, a webhook's): all refused without a connection, as private,
 * loopback or unresolvable (`.invalid`), or not http(s) at all.
 */
const localUrl = fc.constantFrom(
  'https://hooks.invalid/mls',
  'http://photos.invalid/photo.jpg',
  'https://127.0.0.1/hook',
  'http://127.0.0.1:9/photo.jpg',
  'https://10.0.0.1/hook',
  'https://[::1]/hook',
  'https://0x7f.1/hook',
  'https://localhost/hook',
  'https://user:secret@hooks.invalid/',
  'file:///etc/passwd',
  'javascript:alert(1)',
  'ftp://photos.invalid/photo.jpg',
  `https://hooks.invalid/${'a'.repeat(3000)}`,
)

/** `value` with every http(s) address in it replaced by `url`: an example's public address is never called. */
function withUrl(value: unknown, url: string): unknown {
  if (typeof value === 'string') return /^https?:/i.test(value) ? url : value
  if (Array.isArray(value)) return value.map((item) => withUrl(item, url))
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withUrl(item, url)]))
  return value
}

/** One change to a body: at a place found by walking `walk`, a value set, a key removed or added. */
interface Mutation {
  walk: number[]
  action: 'set' | 'remove' | 'add'
  key: string
  value: unknown
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  walk: fc.array(fc.nat(), { maxLength: 4 }),
  action: fc.constantFrom('set', 'remove', 'add'),
  key: oddKey,
  value: oddValue,
})

/** Own enumerable properties only, so that `__proto__` is a key like any other and JSON.stringify writes it. */
function put(target: Record<string, unknown> | unknown[], key: string | number, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

function mutate(body: unknown, mutations: Mutation[]): unknown {
  // A copy made of plain objects, so that the generated value is never changed in place.
  let root: unknown = structuredClone(body)
  for (const { walk, action, key, value } of mutations) {
    if (root === null || typeof root !== 'object') {
      root = action === 'remove' ? undefined : value
      continue
    }
    let parent = root as Record<string, unknown> | unknown[]
    for (const step of walk) {
      const keys = Object.keys(parent)
      const child = keys.length > 0 ? (parent as Record<string, unknown>)[keys[step % keys.length]!] : undefined
      if (child === null || typeof child !== 'object') break
      parent = child as Record<string, unknown> | unknown[]
    }
    const keys = Object.keys(parent)
    const chosen = keys.length > 0 ? keys[(walk.at(-1) ?? 0) % keys.length]! : key
    if (action === 'remove') delete (parent as Record<string, unknown>)[chosen]
    // A copy: the odd values include constants ([], {}, [null]) that every run shares; put as
    // they are, a later mutation could write into one, even put one inside itself (a circle).
    else put(parent, action === 'add' ? key : chosen, structuredClone(value))
  }
  return root
}

function queryValue(schema: JsonSchema, document: OpenApiDocument): fc.Arbitrary<string> {
  return plausibleValue(schema, document).map((value) => (typeof value === 'string' ? value : (JSON.stringify(value) ?? '')))
}

const oddQueryValue = fc.oneof(
  fc.constantFrom(
    '',
    '%00',
    '%',
    '%FF',
    '1e309',
    '-1e309',
    'NaN',
    '-1',
    '99999999999999999999',
    '1.5',
    '0x10',
    '%2B1',
    'null',
    '[]',
    'a'.repeat(10_000),
    '%ED%A0%80',
  ),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map(encodeURIComponent),
  fc.integer().map(String),
)

function queryString(operation: OpenApiOperation, fixtures: Fixtures): fc.Arbitrary<string> {
  const declared = (operation.parameters ?? []).filter((parameter) => parameter.in === 'query')
  const pair = fc.oneof(
    ...declared.map((parameter) =>
      fc
        .oneof(
          { weight: 2, arbitrary: queryValue(parameter.schema, fixtures.document).map(encodeURIComponent) },
          { weight: 1, arbitrary: fc.constantFrom(...(fixtures.fieldValues[parameter.name] ?? [''])).map(encodeURIComponent) },
          { weight: 2, arbitrary: oddQueryValue },
        )
        .map((value) => `${parameter.name}${value === '' ? '' : `=${value}`}`),
    ),
    fc.constantFrom(
      '__proto__[admin]=1',
      '__proto__=1',
      'constructor[prototype][admin]=1',
      'constructor=1',
      'limit[]=1',
      'limit[0]=1&limit[1]=2',
      'a[b][c]=1',
      '=',
      '&',
      '%=%',
      'a=%',
      `${'a'.repeat(5_000)}=1`,
    ),
  )
  return fc.array(pair, { maxLength: declared.length + 2 }).map((pairs) => pairs.join('&'))
}

function path(route: Operation, fixtures: Fixtures): fc.Arbitrary<string> {
  const parameters = (route.operation.parameters ?? []).filter((parameter): parameter is OpenApiParameter => parameter.in === 'path')
  const values = parameters.map((parameter) =>
    fc.oneof(
      { weight: 1, arbitrary: fc.constantFrom(...(fixtures.pathValues[parameter.name] ?? ['1'])).map(encodeURIComponent) },
      { weight: 2, arbitrary: oddSegment },
    ),
  )
  return fc.tuple(fc.tuple(...values), pathTail).map(([chosen, tail]) => {
    let index = 0
    return route.path.replace(/\{[^}]+\}/g, () => chosen[index++]!) + tail
  })
}

interface FormPart {
  name: string
  asFile: boolean
  contentType: string | undefined
  value: string | Buffer
}

/** A multipart form, valid or broken: no boundary, a wrong one, parts cut short or named oddly. */
function multipartForm(fixtures: Fixtures): fc.Arbitrary<{ contentType: string; payload: Buffer }> {
  const part: fc.Arbitrary<FormPart> = fc.record({
    name: fc.constantFrom<string>('file', 'property_id', 'sort_order', '__proto__', 'constructor', 'x', '', 'file"; name="x'),
    asFile: fc.boolean(),
    contentType: fc.constantFrom<string | undefined>(undefined, 'image/jpeg', 'application/json', 'text/plain', 'application/octet-stream'),
    value: fc.oneof(
      fc.constantFrom<string | Buffer>(
        fixtures.photo,
        fixtures.photo.subarray(0, 200),
        ...(fixtures.pathValues.id ?? ['1']),
        '-1',
        '1e309',
        '',
        '\u0000',
        '{"a":',
      ),
      fc.string({ maxLength: 30 }),
      fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
    ),
  })
  // The form the upload takes, then changed: a part dropped, another added, one replaced.
  const propertyIds = fixtures.fieldValues.property_id ?? ['1']
  const validParts = fc
    .tuple(fc.constantFrom(...propertyIds), fc.option(fc.integer(), { nil: undefined }))
    .map(([id, sortOrder]): FormPart[] => [
      { name: 'property_id', asFile: false, contentType: undefined, value: id },
      ...(sortOrder === undefined ? [] : [{ name: 'sort_order', asFile: false, contentType: undefined, value: String(sortOrder) }]),
      { name: 'file', asFile: true, contentType: 'image/jpeg', value: fixtures.photo },
    ])
  const changedParts = fc
    .tuple(validParts, fc.array(fc.tuple(fc.nat(), fc.constantFrom('drop', 'add', 'replace'), part), { maxLength: 2 }))
    .map(([parts, changes]) => {
      const changed = [...parts]
      for (const [at, change, replacement] of changes) {
        const index = at % (changed.length + 1)
        if (change === 'drop') changed.splice(index, 1)
        else if (change === 'add') changed.splice(index, 0, replacement)
        else changed[Math.min(index, changed.length - 1)] = replacement
      }
      return changed
    })
  return fc
    .record({
      boundary: fc.constantFrom('fuzz', 'x', '----WebKitFormBoundary7MA4YWxkTrZu0gW', 'b'.repeat(70)),
      declared: fc.oneof({ weight: 6, arbitrary: fc.constant('right' as const) }, fc.constantFrom('none', 'wrong', 'quoted', 'empty', 'too long', 'twice')),
      parts: fc.oneof({ weight: 2, arbitrary: changedParts }, { weight: 1, arbitrary: fc.array(part, { maxLength: 4 }) }),
      closed: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      cutAt: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat() }),
    })
    .map(({ boundary, declared, parts, closed, cutAt }) => {
      const chunks: Buffer[] = []
      for (const { name, asFile, contentType, value } of parts) {
        const disposition = `form-data; name="${name}"${asFile ? '; filename="photo.jpg"' : ''}`
        chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${contentType ? `Content-Type: ${contentType}\r\n` : ''}\r\n`))
        chunks.push(Buffer.isBuffer(value) ? value : Buffer.from(value))
        chunks.push(Buffer.from('\r\n'))
      }
      if (closed) chunks.push(Buffer.from(`--${boundary}--\r\n`))
      const whole = Buffer.concat(chunks)
      const payload = cutAt === undefined ? whole : whole.subarray(0, cutAt % (whole.length + 1))
      const contentType = {
        right: `multipart/form-data; boundary=${boundary}`,
        none: 'multipart/form-data',
        wrong: 'multipart/form-data; boundary=not-the-one',
        quoted: `multipart/form-data; boundary="${boundary}"`,
        empty: 'multipart/form-data; boundary=',
        'too long': `multipart/form-data; boundary=${'b'.repeat(300)}`,
        twice: `multipart/form-data; boundary=${boundary}; boundary=other`,
      }[declared]
      return { contentType, payload }
    })
}

interface Body {
  contentType?: string
  payload?: string | Buffer
}

function body(route: Operation, fixtures: Fixtures): fc.Arbitrary<Body> {
  const schema = route.operation.requestBody?.content['application/json']?.schema
  const json = (text: fc.Arbitrary<string>) => fc.tuple(text, fc.oneof({ weight: 5, arbitrary: fc.constant('application/json') }, contentTypes))
  const fromSchema = schema
    ? fc
        .tuple(plausibleValue(schema, fixtures.document), localUrl, fc.array(mutation, { maxLength: 3 }))
        .map(([valid, url, mutations]) => toJsonText(mutate(withUrl(valid, url), mutations)))
    : fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value))
  const multipart = multipartForm(fixtures)
  return fc.oneof(
    { weight: 6, arbitrary: json(fromSchema).map(([payload, contentType]) => ({ payload, contentType })) },
    { weight: 3, arbitrary: json(oddJsonText).map(([payload, contentType]) => ({ payload, contentType })) },
    { weight: route.operation.requestBody?.content['multipart/form-data'] ? 12 : 1, arbitrary: multipart },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.uint8Array({ maxLength: 200 }), contentTypes).map(([bytes, contentType]) => ({ payload: Buffer.from(bytes), contentType })),
    },
    { weight: 1, arbitrary: fc.option(contentTypes, { nil: undefined }).map((contentType) => ({ contentType })) },
  )
}

const otherMethod = fc.constantFrom<Method>('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS')

/** Header values Node accepts (visible ASCII and Latin-1), odd in what they say. */
const oddHeaderValue = fc.oneof(
  fc.constantFrom('', ' ', 'x'.repeat(8_000), '*', 'W/"x"', '"', '\u00ff\u00fe', 'null', '-1', '1e309', 'a, b, c'),
  fc.string({ maxLength: 40 }).map((text) => text.replace(/[^\x20-\x7e]/g, '')),
)

/** Any request to `route`: mostly its own method, the right key, a body its kind takes, each mutated. */
export function badRequest(route: Operation, fixtures: Fixtures): fc.Arbitrary<FuzzRequest> {
  const scheme = Object.keys(route.operation.security?.[0] ?? {})[0]
  const credentials = scheme ? fixtures.credentials[scheme] : undefined
  const headerNames = (route.operation.parameters ?? []).filter((parameter) => parameter.in === 'header').map((parameter) => parameter.name)
  return fc
    .record({
      method: fc.oneof({ weight: 9, arbitrary: fc.constant(route.method) }, { weight: 1, arbitrary: otherMethod }),
      path: path(route, fixtures),
      query: fc.oneof({ weight: 1, arbitrary: fc.constant('') }, { weight: 2, arbitrary: queryString(route.operation, fixtures) }),
      key: fc.oneof({ weight: 8, arbitrary: fc.constant('right') }, fc.constantFrom('wrong', 'none', 'other scheme')),
      headers: fc.array(fc.tuple(fc.constantFrom(...headerNames, 'idempotency-key', 'if-none-match', 'accept', 'accept-encoding'), oddHeaderValue), {
        maxLength: 2,
      }),
      body: body(route, fixtures),
    })
    .map(({ method, path: url, query, key, headers, body: { contentType, payload } }) => {
      const request: FuzzRequest = { method, url: query === '' ? url : `${url}?${query}`, headers: {} }
      for (const [name, value] of headers) request.headers[name] = value
      const [keyHeader, keyValue] = credentials ?? fixtures.credentials.ApiKey ?? ['x-api-key', '']
      if (key === 'right' && credentials) request.headers[keyHeader] = keyValue
      if (key === 'wrong') request.headers[keyHeader] = `${keyValue.slice(0, -1)}0`
      if (key === 'other scheme') for (const [header, value] of Object.values(fixtures.credentials)) request.headers[header] = value
      if (contentType !== undefined) request.headers['content-type'] = contentType
      if (payload !== undefined) request.payload = payload
      // How fast-check prints the request in a failure's report: short, and unseen by inject.
      Object.defineProperty(request, fc.toStringMethod, { value: () => describeRequest(request) })
      return request
    })
}
