import { Type, type Static, type TLiteral, type TObject, type TProperties, type TSchema, type TUnion } from 'typebox'
import { MAX_FIELD_ERRORS, MAX_LOC_PART_LENGTH, MAX_TEXT_LENGTH } from './errors.js'

/**
 * Schema pieces every module shares: the `{detail}` error bodies, pagination, ids, timestamps.
 * A schema with a `title` is a named type of the API: the OpenAPI document lists it once
 * under `components.schemas` by that name and refers to it wherever it is used.
 */

/**
 * A whole number that fits PostgreSQL's `integer` (the ids' and most counters' column type).
 * The document gives integers their `int32`/`int64` format from these bounds.
 */
export const Int32 = (options: { minimum?: number; maximum?: number; description?: string; default?: number; 'x-not-found'?: string } = {}) =>
  Type.Integer({ minimum: -2_147_483_648, maximum: 2_147_483_647, ...options })

/** A count or offset: any whole number a JSON number holds exactly (PostgreSQL's bigint goes further). */
export const Int64 = (options: { minimum?: number; maximum?: number; description?: string; default?: number } = {}) =>
  Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, ...options })

export const Id = Int32({ minimum: 1 })

/**
 * An id in a path: a whole number, or a 422; one no id can be (0, negative, past the column's
 * range) is as unknown as any other, so it answers the route's 404, `notFound`.
 */
export const PathId = (notFound: string) => Int32({ minimum: 1, 'x-not-found': notFound })

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** What a one-line name may not hold: control characters (C0, DEL and C1, NEL among them) and the Unicode line and paragraph separators. */
const LINE_BREAKING = String.raw`\u0000-\u001f\u007f-\u009f\u2028\u2029`
const ONE_LINE = `^[^${LINE_BREAKING}]*$`
export const NOT_ONE_LINE_MESSAGE = 'must be one line of text, without tabs or other control characters'

/** Whether the text is one line, as OneLineName requires (for what is checked outside a schema: the admin CLI's options). */
export const isOneLine = (text: string) => new RegExp(ONE_LINE, 'u').test(text)

/** A name people read in a list (an agency, a city, an API key): one line, without tabs or other control characters. */
export const OneLineName = (description?: string, maxLength = 200) =>
  Type.String({
    minLength: 1,
    maxLength,
    pattern: ONE_LINE,
    'x-message': NOT_ONE_LINE_MESSAGE,
    ...(description ? { description } : {}),
  })

/** A string from a closed list, as one named type (`PropertyTypeName`, `ModerationReasonCode`…). */
export const StringEnum = <const V extends string[]>(title: string, values: [...V], description?: string) =>
  Type.Enum(values, { title, ...(description ? { description } : {}) })

/**
 * A value the service reads back from a text column: the document shows the closed list it
 * writes there, while code that maps rows keeps seeing a `string`.
 */
export const asStoredText = <T extends TSchema>(schema: T) => Type.Unsafe<string>(schema)

/** A URL the service hands out or was given (photos, webhook receivers). */
export const Url = (description: string) => Type.String({ format: 'uri', maxLength: 2048, description })

/**
 * A URL a client gives for the service to reach (a webhook, a feed, a photo). URL parsers drop
 * blanks at either end and line breaks and tabs inside, so such a URL would work while being
 * stored, and shown back, as it was written: refused instead.
 */
export const GivenUrl = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: 2048,
    pattern: String.raw`^\S(?:[^\t\n\r]*\S)?$`,
    'x-message': 'must be a URL without blanks at either end, and without line breaks or tabs',
    description,
  })

/**
 * A GivenUrl shown back as it was written, which is what was checked and is what is requested,
 * but not always in the strict form `format: uri` names: a blank in the path, a host in Cyrillic.
 */
export const ShownGivenUrl = (description: string) => Type.String({ minLength: 1, maxLength: 2048, description: `${description} As it was given.` })

export const ErrorBody = Type.Object(
  { detail: Type.String({ maxLength: MAX_TEXT_LENGTH, description: 'What went wrong, as a sentence a person understands.' }) },
  { title: 'Error', examples: [{ detail: 'Invalid or missing API key' }] },
)

export const FieldErrorSchema = Type.Object(
  {
    loc: Type.Array(Type.Union([Type.String({ maxLength: MAX_LOC_PART_LENGTH }), Int32({ minimum: 0 })]), {
      maxItems: 100,
      description: 'Where the problem is: the request part ("body", "query", "path", "header"), then the field path.',
    }),
    msg: Type.String({ maxLength: MAX_TEXT_LENGTH }),
  },
  { title: 'FieldError' },
)

export const ValidationErrorBody = Type.Object(
  {
    detail: Type.String({ maxLength: MAX_TEXT_LENGTH }),
    errors: Type.Array(FieldErrorSchema, {
      maxItems: MAX_FIELD_ERRORS,
      description: `Every problem found, one per field: the first ${MAX_FIELD_ERRORS} (the detail counts them all).`,
    }),
  },
  {
    title: 'ValidationError',
    description: 'The request is well-formed but not valid; `errors` lists every problem.',
    examples: [{ detail: 'Invalid body.email: must match format "email".', errors: [{ loc: ['body', 'email'], msg: 'must match format "email"' }] }],
  },
)

/**
 * Response headers, as the OpenAPI document declares them: `headers` of a response maps each
 * name to its schema and description (@fastify/swagger reads it; serialization ignores it).
 */
export type ResponseHeaders = Record<string, Record<string, unknown> & { description: string }>

export const header = (description: string, schema: Record<string, unknown>) => ({ ...schema, description })
const seconds = { type: 'integer', format: 'int32', minimum: 0, maximum: 86_400 }
const count = { type: 'integer', format: 'int32', minimum: 0, maximum: 1_000_000 }

/** Sent with every answer of a rate-limited route once the request is counted (IETF RateLimit header fields draft). */
export const rateLimitHeaders: ResponseHeaders = {
  'RateLimit-Limit': header('Requests allowed in the current window.', count),
  'RateLimit-Remaining': header('Requests left in the current window.', count),
  'RateLimit-Reset': header('Seconds until the window resets.', seconds),
}

const retryAfter = (description: string) => ({ 'Retry-After': header(description, seconds) })

/** `Location` of a created resource, a path relative to the server. */
export const locationHeader = (description: string): ResponseHeaders => ({
  Location: header(description, { type: 'string', format: 'uri-reference', maxLength: 300 }),
})

const errorDescriptions = {
  400: 'Malformed request: a body that is not JSON, a path that is not valid percent-encoding, a request without a Host header.',
  401: 'Missing or invalid key.',
  404: 'Not found, or not the caller’s.',
  409: 'Conflicts with the current state, or collided with a concurrent change to the same data (retry it).',
  410: 'Gone: what was asked for is no longer kept.',
  413: 'Too large.',
  415: 'Unsupported media type.',
  422: 'Validation failed.',
  429: 'Rate limited; see Retry-After.',
  500: 'Something went wrong on our side; the error has been logged.',
  503: 'Temporarily unavailable (the database cannot be reached, or the service is starting or stopping); retry after the Retry-After seconds.',
} as const

type ErrorStatus = keyof typeof errorDescriptions
const ALWAYS_POSSIBLE = [400, 500, 503] as const
type AlwaysPossible = (typeof ALWAYS_POSSIBLE)[number]

const errorHeaders: Partial<Record<ErrorStatus, ResponseHeaders>> = {
  429: { ...retryAfter('Seconds to wait before retrying.'), ...rateLimitHeaders },
  503: retryAfter('Seconds to wait before retrying.'),
}

/**
 * The response schemas for the given error statuses, for a route's `schema.response`. Every
 * operation can also answer 400 (a request HTTP itself finds malformed: a path that is not
 * valid percent-encoding, no Host header), 500 (a bug, its message hidden) and 503 (the
 * database is unreachable, the service starting or stopping), so those three are always
 * included. `x-response-description` describes the answer, the `title` names its body.
 */
export function errorResponses<const S extends ErrorStatus>(...statuses: S[]): Record<S | AlwaysPossible, TSchema> {
  const responses = {} as Record<S | AlwaysPossible, TSchema>
  for (const status of [...statuses, ...ALWAYS_POSSIBLE]) {
    const body = status === 422 ? ValidationErrorBody : ErrorBody
    responses[status] = { ...body, 'x-response-description': errorDescriptions[status], ...withHeaders(errorHeaders[status]) }
  }
  return responses
}

const withHeaders = (headers: ResponseHeaders | undefined) => (headers ? { headers } : {})

/**
 * The 429 of a route that has no limit of its own but sits behind a key check: the caller's
 * address has failed too many key checks (or asked for too many unknown routes) this minute.
 * Only Retry-After comes with it: the request was refused before it was counted anywhere.
 */
export const failureThrottleResponse: TSchema = {
  ...ErrorBody,
  'x-response-description': 'Too many failed key checks from this address; retry after the Retry-After seconds.',
  headers: retryAfter('Seconds to wait before retrying.'),
}

/**
 * A response body with the headers sent beside it, for the OpenAPI document (`headers` is
 * read by @fastify/swagger and ignored by serialization).
 */
export function withResponseHeaders<T extends TSchema>(schema: T, headers: ResponseHeaders, description?: string): T {
  const given = (schema as { headers?: ResponseHeaders }).headers
  return { ...schema, headers: { ...given, ...headers }, ...(description ? { 'x-response-description': description } : {}) }
}

/** A response of a rate-limited route: sent after the request was counted, so with RateLimit-* too. */
export const rateLimited = <T extends TSchema>(schema: T, headers: ResponseHeaders = {}, description?: string): T =>
  withResponseHeaders(schema, { ...headers, ...rateLimitHeaders }, description)

/**
 * `errorResponses` of a rate-limited route: its error answers carry RateLimit-* too (a 500 or a
 * 503 once the request was counted), except a 401, which is answered before the request is
 * counted, and a 429, which has its own.
 */
export function rateLimitedErrorResponses<const S extends ErrorStatus>(...statuses: S[]): Record<S | AlwaysPossible, TSchema> {
  const responses = errorResponses(...statuses)
  for (const status of [...statuses, ...ALWAYS_POSSIBLE]) {
    if (status !== 401 && status !== 429) {
      responses[status] = withResponseHeaders(responses[status], rateLimitHeaders)
    }
  }
  return responses
}

export const PageQuery = {
  limit: Int32({ minimum: 1, maximum: 100, default: 50, description: 'Page size, 1 to 100.' }),
  offset: Int64({ default: 0, description: 'Number of items skipped.' }),
}

/** `{items, total, limit, offset}`, the envelope of every paged list, named `title`. */
export function Page<T extends TSchema>(item: T, title: string) {
  return Type.Object(
    {
      items: Type.Array(item, { maxItems: 100 }),
      total: Int64({ description: 'Number of items matching the filters, over all pages.' }),
      limit: Int32({ minimum: 1, maximum: 100 }),
      offset: Int64(),
    },
    { title },
  )
}

/**
 * The query of a list paged by cursor as well as by offset: a `cursor` is the `next_cursor` of
 * the page before (src/lib/cursor.ts). Ours are well under 400 characters.
 */
export const CursorPageQuery = {
  ...PageQuery,
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 400,
      pattern: '^[A-Za-z0-9_-]+$',
      description:
        '`next_cursor` of the previous page: the page after it, in the same sort and filters (another search’s cursor is a 422). ' +
        'Costs the same at any depth, and listings added meanwhile do not shift the pages. Not with a non-zero `offset`.',
    }),
  ),
}

/** `{items, total, limit, offset, next_cursor}`: a Page that can also be walked by cursor. */
export function CursorPage<T extends TSchema>(item: T, title: string) {
  const page = Page(item, title)
  return Type.Object(
    {
      ...page.properties,
      offset: Int64({ description: 'The `offset` asked for; 0 on a page by cursor, whose items are counted from the cursor.' }),
      next_cursor: Nullable(Type.String({ maxLength: 400, description: 'Give as `cursor` for the next page; null on the last page.' })),
    },
    { title },
  )
}

/** A reference shown by id and name, `{id, name}`. */
export const Named = Type.Object({ id: Id, name: Type.String({ maxLength: 200 }) }, { title: 'ReferenceItem' })

export const Timestamp = Type.String({ format: 'date-time', maxLength: 40, examples: ['2026-11-22T09:15:02.123+00:00'] })

/**
 * One of several object shapes told apart by a string property (`status`, `type`), as an
 * OpenAPI `oneOf` with a discriminator, so generated clients narrow on it. Each branch must
 * be named (`title`) and hold that property as a literal. Typed as the union of the branches.
 */
export function OneOf<const T extends TObject<TProperties>[]>(branches: [...T], propertyName: string, options: { title: string; description?: string }) {
  const mapping: Record<string, string> = {}
  for (const branch of branches) {
    const value = (branch.properties[propertyName] as TLiteral | undefined)?.const
    const title: unknown = (branch as { title?: unknown }).title
    if (typeof value !== 'string' || typeof title !== 'string') throw new Error(`OneOf: every branch needs a title and a literal ${propertyName}`)
    mapping[value] = `#/components/schemas/${title}`
  }
  return Type.Unsafe<Static<TUnion<T>>>({ ...options, oneOf: branches, discriminator: { propertyName, mapping } })
}
