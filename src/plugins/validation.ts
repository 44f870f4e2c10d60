import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import formatsModule from 'ajv-formats/dist/formats.js'
import { domainToASCII } from 'node:url'
import type { FastifyInstance, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import { DECIMAL_NUMBER_TEXT, decimalPlaces } from '../lib/decimals.js'
import { ApiError, describeFieldErrors, MAX_FIELD_ERRORS, shownFieldErrors, type FieldError } from '../lib/errors.js'

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default
const asciiEmail = formatsModule.fullFormats.email as RegExp

/** Letters and digits beyond ASCII, which an internationalised e-mail's local part may hold. */
const NON_ASCII_LETTER = /[^\p{ASCII}](?<=[\p{L}\p{M}\p{N}])/gu

/**
 * JSON Schema's `idn-email` (RFC 6531), which ajv-formats lacks: `email` with the domain in any
 * script (`info@агентство.рф`, checked in its ASCII form `xn--…`) and letters of any script in
 * the local part.
 */
function isIdnEmail(value: string): boolean {
  // A blank or an invisible character (a zero-width space pasted with the address, a filler, a
  // variation selector) is in no e-mail, although the domain's conversion below would quietly
  // drop some of them and the local part's letters pass for letters.
  if (/[\s\p{Cf}\p{Cc}\p{Default_Ignorable_Code_Point}]/u.test(value)) return false
  const at = value.lastIndexOf('@')
  const domain = domainToASCII(value.slice(at + 1))
  return at > 0 && domain !== '' && asciiEmail.test(`${value.slice(0, at).replace(NON_ASCII_LETTER, 'a')}@${domain}`)
}

const commonOptions: Options = {
  allErrors: true, // a client fixing a form wants every problem at once
  useDefaults: true,
  removeAdditional: false, // unknown fields are rejected, never silently dropped
  strict: true,
  strictRequired: false,
  verbose: true, // findings carry their schema, for `x-message`
}

/**
 * Our keywords: `x-message`, how to describe a schema's failure better than ajv would;
 * `x-max-decimals`, the digits a number may have after the point (`multipleOf: 0.01` cannot
 * say it: in binary 1234567.89 / 0.01 is 123456788.99999999; a number's shortest decimal
 * form, which JSON parsing round-trips, can); and `x-decimal-range`, `[minimum, maximum]` of a
 * number written as a string (a coordinate `"91"`), which `minimum` and `maximum` do not check;
 * `x-not-found`, on an id or code in a path, the 404 to answer when it is out of the range
 * any row's can be in (see `notFoundInPath`).
 */
function withKeywords(ajv: Ajv): Ajv {
  ajv.addFormat('idn-email', { type: 'string', validate: isIdnEmail })
  ajv.addVocabulary(['x-message', 'x-not-found'])
  ajv.addKeyword({
    keyword: 'x-max-decimals',
    type: 'number',
    schemaType: 'number',
    validate: (maximum: number, value: number) => decimalPlaces(value) <= maximum,
    error: { message: ({ schema }) => `must have at most ${Number(schema)} decimal places` },
  })
  ajv.addKeyword({
    keyword: 'x-decimal-range',
    type: 'string',
    schemaType: 'array',
    validate: ([minimum, maximum]: [number, number], value: string) => Number(value) >= minimum && Number(value) <= maximum,
    error: { message: ({ schema }) => `must be from ${(schema as number[])[0]} to ${(schema as number[])[1]}` },
  })
  return ajv
}

/**
 * One pair per process, shared by every app built in it: ajv keeps what it compiled by schema
 * object, and the routes' schemas are module constants, so an app built after the first (a
 * test file's, in a process that runs many) reuses the validators instead of compiling them again.
 * No schema carries an `$id`: ajv refuses a second schema object with an id it already holds.
 */
const bodyAjv = withKeywords(addFormats(new Ajv({ ...commonOptions, coerceTypes: false })))
const textAjv = withKeywords(addFormats(new Ajv({ ...commonOptions, coerceTypes: 'array' })))

/**
 * Request validation with two compilers: bodies are taken as typed (a `"5"` is not a number
 * unless the schema says so), while path and query strings, which are text by nature,
 * are coerced to the schema's types.
 */
export function installValidators(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'body' ? bodyAjv.compile(schema) : decimalNumbersOnly(schema as TextPartSchema, textAjv.compile(schema)),
  )
}

interface TextPartSchema {
  properties?: Record<string, { type?: unknown }>
}

/**
 * How a number must be written in a path or a query: decimal, as people and clients write it.
 * ajv's coercion reads any text JavaScript reads as a number, so `0x10`, ` 5` or `1e0` would
 * pass for 16, 5 and an integer 1.
 */
const decimalText = {
  integer: { pattern: /^-?\d+$/, message: 'must be an integer in decimal digits' },
  number: { pattern: DECIMAL_NUMBER_TEXT, message: 'must be a number in decimal digits' },
} as const

/** The compiled validator of a path or query schema, after a check of its numbers as written. */
function decimalNumbersOnly(schema: TextPartSchema, validate: ValidateFunction): ValidateFunction {
  const numbers = Object.entries(schema.properties ?? {}).flatMap(([name, property]) =>
    property.type === 'integer' || property.type === 'number' ? [{ name, ...decimalText[property.type] }] : [],
  )
  if (numbers.length === 0) return validate
  const checked = ((data: Record<string, unknown> | undefined) => {
    const misspelled = numbers.filter(({ name, pattern }) => typeof data?.[name] === 'string' && !pattern.test(data[name]))
    const valid = validate(data)
    if (misspelled.length === 0) {
      checked.errors = validate.errors
      return valid
    }
    // Every problem at once: these first, then ajv's about the other fields.
    const paths = new Set(misspelled.map(({ name }) => `/${name}`))
    checked.errors = [
      ...misspelled.map(({ name, message }) => ({ instancePath: `/${name}`, schemaPath: `#/properties/${name}`, keyword: 'pattern', params: {}, message })),
      ...(validate.errors ?? []).filter((error) => !paths.has(error.instancePath)),
    ]
    return false
  }) as ValidateFunction
  return checked
}

/**
 * Whether an operation may be sent without a body: it takes none, or every field of its body
 * is optional (creating an API key, an operator's rejection, a PATCH).
 */
export function bodyMayBeLeftOut(schema: unknown): boolean {
  return schema === undefined || !((schema as { required?: unknown[] }).required?.length ?? 0)
}

/** On routes whose body is all optional, a request without one counts as `{}`. */
export function leftOutBodiesAsEmpty(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (route.schema?.body === undefined || !bodyMayBeLeftOut(route.schema.body)) return
    route.preValidation = [...[route.preValidation ?? []].flat(), asEmptyObject]
  })
}

async function asEmptyObject(request: FastifyRequest): Promise<void> {
  request.body ??= {}
}

/** The methods whose bodies are read (Fastify parses none for GET or HEAD). */
const METHODS_WITH_BODIES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * Refuses a body sent to an operation that takes none, each of its fields named as not allowed,
 * as an unknown field is everywhere else (no field is ever taken from where it does not belong).
 * An empty object passes: some clients send `{}` with every POST. Added as a preHandler to such
 * routes only, as they are registered, so that a route with a body schema or a GET pays nothing.
 * Multipart routes read their own bodies and leave `request.body` unset.
 */
export function refuseBodiesWhereNone(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (route.schema?.body !== undefined || ![route.method].flat().some((method) => METHODS_WITH_BODIES.has(method))) return
    route.preHandler = [...[route.preHandler ?? []].flat(), refuseBody]
  })
}

async function refuseBody(request: FastifyRequest): Promise<void> {
  const body: unknown = request.body
  if (body === undefined || body === null) return
  if (typeof body !== 'object' || Array.isArray(body)) throw ApiError.validation([{ loc: ['body'], msg: 'must be left out: this operation takes no body' }])
  const fields = Object.keys(body)
  if (fields.length > 0) throw ApiError.validation(fields.slice(0, MAX_REPORTED).map((field) => ({ loc: ['body', field], msg: 'is not an allowed field' })))
}

/**
 * preHandler hook for every route: values the schemas let through but the database cannot
 * take, answered 422 before they fail a query as a 500.
 * - The NUL character, in any text or key (`"\u0000"` in JSON, `%00` in a URL): PostgreSQL's
 *   text cannot hold it.
 * - Half of a UTF-16 surrogate pair (`"\ud800"` alone in JSON): not a character at all. jsonb
 *   refuses it, and text would store it as U+FFFD, so the same value would fail or change
 *   depending on where it is kept.
 * - A number that is not finite: ajv coerces a query string like `1e400` or `Infinity` to
 *   ±Infinity and lets it through `minimum` and `maximum`, which it checks on finite numbers.
 */
export async function rejectUnstorableValues(request: FastifyRequest): Promise<void> {
  const errors = unstorableValues([
    ['path', request.params],
    ['query', declaredParameters(request)],
    ['body', request.body],
  ])
  if (errors.length > 0) throw ApiError.validation(errors)
}

/** The query's parameters the route reads: the others are ignored, whatever they hold (a `utm_source=%00`). */
function declaredParameters(request: FastifyRequest): Record<string, unknown> {
  const declared = (request.routeOptions.schema?.querystring as { properties?: Record<string, unknown> } | undefined)?.properties
  const query = request.query as Record<string, unknown> | undefined
  if (!declared || !query) return {}
  return Object.fromEntries(Object.entries(query).filter(([name]) => Object.hasOwn(declared, name)))
}

const NUL = '\u0000'
/** Enough to show what is wrong; a body of a million NULs needs no million errors. */
const MAX_REPORTED = 100
const HAS_NUL = 'must not contain the NUL character (\\u0000)'
/** An unpaired surrogate: in `u` mode a pair is one code point, so only a lone half matches. */
const LONE_SURROGATE = /\p{Surrogate}/u
const HAS_LONE_SURROGATE = 'must be valid Unicode text: it holds half of a surrogate pair (\\ud800 to \\udfff) without the other'
/** What is wrong with a text or key, if anything. */
const textProblem = (text: string): string | undefined => (text.includes(NUL) ? HAS_NUL : LONE_SURROGATE.test(text) ? HAS_LONE_SURROGATE : undefined)

/** A value met in the walk, with the way back to its root for the error's `loc`. */
interface Visit {
  value: unknown
  key: string | number
  parent: Visit | undefined
}

const locOf = (visit: Visit): (string | number)[] => {
  const loc: (string | number)[] = []
  for (let at: Visit | undefined = visit; at; at = at.parent) loc.push(at.key)
  return loc.reverse()
}

/**
 * Every string, key and number of the values, walked with a list rather than recursion (a body
 * of 5,000 nested arrays, 10 KB, would overflow the call stack), each visit linked to its
 * parent so no path is copied unless it is reported.
 */
function unstorableValues(roots: [string, unknown][]): FieldError[] {
  const errors: FieldError[] = []
  // Pushed last to first, so they come off in the request's order and so do the errors.
  const pending: Visit[] = roots.map(([part, value]) => ({ value, key: part, parent: undefined })).reverse()
  for (let visit = pending.pop(); visit !== undefined && errors.length < MAX_REPORTED; visit = pending.pop()) {
    const { value, key } = visit
    const keyProblem = typeof key === 'string' ? textProblem(key) : undefined
    if (keyProblem) {
      errors.push({ loc: locOf(visit), msg: keyProblem })
    } else if (typeof value === 'string') {
      const problem = textProblem(value)
      if (problem) errors.push({ loc: locOf(visit), msg: problem })
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) errors.push({ loc: locOf(visit), msg: 'must be a finite number' })
    } else if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index--) pending.push({ value: value[index], key: index, parent: visit })
    } else if (isParsedObject(value)) {
      const entries = Object.entries(value)
      for (let index = entries.length - 1; index >= 0; index--) pending.push({ value: entries[index]![1], key: entries[index]![0], parent: visit })
    }
  }
  return errors
}

/**
 * Parsed JSON, query strings and path parameters: plain objects, or objects of a class whose
 * prototype has none above it (as Fastify builds the latter); not a stream or a buffer. Decided
 * by prototype, not by `constructor`, which a query string may set (`?constructor=1`).
 */
function isParsedObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false
  const prototype: unknown = Object.getPrototypeOf(value)
  return prototype === null || prototype === Object.prototype || Object.getPrototypeOf(prototype) === null
}

const locationOfPart: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
}

/**
 * The `detail` of a 404 when a path names what no row can be (an id of 0, a negative one or one
 * past the integer column's range; a registration code longer than any): no such thing exists,
 * as for any unknown id, so it is not found rather than invalid. An id that is not a whole
 * number stays a 422.
 */
export function notFoundInPath(validation: FastifySchemaValidationError[], context: string | undefined): string | undefined {
  if (context !== 'params') return undefined
  for (const finding of validation as ErrorObject[]) {
    const detail: unknown = finding.parentSchema?.['x-not-found']
    if (OUT_OF_RANGE.has(finding.keyword) && typeof detail === 'string') return detail
  }
  return undefined
}

const OUT_OF_RANGE = new Set(['minimum', 'maximum', 'minLength', 'maxLength'])

/**
 * The error Fastify raises for a failed validation. Its message is never shown: the error
 * handler words the answer from the findings (describeValidationFailure). Fastify's own would
 * join every finding into one text, a hundred thousand of them for a body of unknown fields.
 */
export function validationFailed(_findings: FastifySchemaValidationError[], part: string): Error {
  return new Error(`The request's ${part} is not valid.`)
}

/** Turns ajv's findings into the `errors` list and `detail` sentence of a 422. */
export function describeValidationFailure(validation: FastifySchemaValidationError[], context: string | undefined): { detail: string; errors: FieldError[] } {
  const part = locationOfPart[context ?? 'body'] ?? 'body'
  // Grouped by the JSON pointer of the field each names: a body of 100,000 unknown fields makes
  // as many findings, and only the shown ones need their location spelt out.
  const byPointer = new Map<string, ErrorObject[]>()
  for (const finding of validation as ErrorObject[]) {
    const pointer = pointerOf(finding)
    const findings = byPointer.get(pointer)
    if (findings) findings.push(finding)
    else byPointer.set(pointer, [finding])
  }
  // A union (`owner: object | null`) fails as a whole when something inside it fails; the
  // finding inside says what is wrong, so the union's own complaint is dropped. The locations
  // with a finding deeper inside, gathered once: compared pair by pair, thousands of bad items
  // of a union took seconds.
  const enclosing = new Set<string>()
  for (const pointer of byPointer.keys()) {
    for (let end = pointer.lastIndexOf('/'); end > 0; end = pointer.lastIndexOf('/', end - 1)) enclosing.add(pointer.slice(0, end))
    if (pointer !== '') enclosing.add('')
  }
  const explained = [...byPointer].filter(([pointer, findings]) => !findings.some((finding) => finding.keyword === 'anyOf') || !enclosing.has(pointer))
  // Worded only as far as they are shown; the detail counts them all.
  const errors = shownFieldErrors(
    explained.slice(0, MAX_FIELD_ERRORS).map(([, findings]) => ({ loc: [part, ...pathSegments(findings[0]!)], msg: messageFor(findings, part) })),
  )
  return { detail: describeFieldErrors(errors, explained.length), errors }
}

/** The JSON pointer of the field a finding is about: a missing or unknown field's own, not its object's. */
function pointerOf(finding: ErrorObject): string {
  const params = finding.params as Record<string, unknown>
  const field = finding.keyword === 'required' ? params.missingProperty : finding.keyword === 'additionalProperties' ? params.additionalProperty : undefined
  return typeof field === 'string' ? `${finding.instancePath}/${field.replace(/~/g, '~0').replace(/\//g, '~1')}` : finding.instancePath
}

function pathSegments(finding: ErrorObject): (string | number)[] {
  const segments: (string | number)[] = finding.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment))
  const params = finding.params as Record<string, unknown>
  if (finding.keyword === 'required') segments.push(String(params.missingProperty))
  if (finding.keyword === 'additionalProperties') segments.push(String(params.additionalProperty))
  return segments
}

function messageFor(findings: ErrorObject[], part: string): string {
  const first = findings[0]!
  // No query parameter takes a list: one given twice (`city_id=1&city_id=2`) arrives as a list
  // of its values, and "must be integer" would not say what is wrong with it.
  if (part === 'query' && Array.isArray(first.data)) return 'must be given once'
  if (first.keyword === 'required') return 'is required'
  if (first.keyword === 'additionalProperties') return 'is not an allowed field'
  // A PATCH of nothing (`{}`), the one object the schemas hold to a least number of fields.
  if (first.keyword === 'minProperties') return 'must name at least one field to change'
  if (first.keyword === 'enum') {
    const allowed = (first.params as { allowedValues: unknown[] }).allowedValues
    return `must be one of: ${allowed.map((value) => JSON.stringify(value)).join(', ')}`
  }
  // A union (anyOf) reports each branch separately; say once what would have been accepted.
  const union = findings.find((finding) => finding.keyword === 'anyOf')
  if (union) {
    const custom: unknown = union.parentSchema?.['x-message']
    if (typeof custom === 'string') return custom
    // A branch of the value's own type that failed a bound (a text too long for `string | null`)
    // says what is wrong; the other branches' types would only mislead.
    const bound = findings.find((finding) => !['anyOf', 'type', 'const'].includes(finding.keyword))
    if (bound?.message) return inWords(bound)
    const alternatives = findings.flatMap((finding) => {
      const params = finding.params as Record<string, unknown>
      if (finding.keyword === 'type') return [String(params.type)]
      if (finding.keyword === 'const') return [JSON.stringify(params.allowedValue)]
      return []
    })
    return alternatives.length > 0 ? `must be ${[...new Set(alternatives)].join(' or ')}` : 'has an invalid value'
  }
  return inWords(first)
}

/** ajv's message, but a pattern's own words where its schema gives them: ajv would quote the regular expression. */
function inWords(finding: ErrorObject): string {
  const words: unknown = finding.parentSchema?.['x-message']
  if (finding.keyword === 'pattern' && typeof words === 'string') return words
  return finding.message ?? 'is invalid'
}
