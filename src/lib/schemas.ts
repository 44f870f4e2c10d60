import { Type, type TSchema } from 'typebox'

/**
 * Schema pieces every module shares: the error bodies of D2, pagination, ids. Route schemas
 * declare every status they can answer, so `/openapi.json` documents errors too.
 */
export const ErrorBody = Type.Object(
  { detail: Type.String({ description: 'What went wrong, as a sentence a person understands.' }) },
  { additionalProperties: true, examples: [{ detail: 'Invalid or missing API key' }] },
)

export const FieldErrorSchema = Type.Object({
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), {
    description: 'Where the problem is: the request part ("body", "query", "path", "header"), then the field path.',
  }),
  msg: Type.String(),
})

export const ValidationErrorBody = Type.Object(
  {
    detail: Type.String(),
    errors: Type.Array(FieldErrorSchema),
  },
  {
    description: 'The request is well-formed but not valid; `errors` lists every problem.',
    examples: [{ detail: 'Invalid body.email: must match format "email".', errors: [{ loc: ['body', 'email'], msg: 'must match format "email"' }] }],
  },
)

const errorDescriptions = {
  400: 'Malformed request (for example a body that is not JSON).',
  401: 'Missing or invalid key.',
  404: 'Not found, or not the caller’s.',
  409: 'Conflicts with the current state.',
  413: 'Too large.',
  415: 'Unsupported media type.',
  422: 'Validation failed.',
  429: 'Rate limited; see Retry-After.',
  503: 'Temporarily unavailable; retry shortly.',
} as const

type ErrorStatus = keyof typeof errorDescriptions

/** The response schemas for the given error statuses, for a route's `schema.response`. */
export function errorResponses<const S extends ErrorStatus>(...statuses: S[]): Record<S, TSchema> {
  const responses = {} as Record<S, TSchema>
  for (const status of statuses) {
    responses[status] =
      status === 422 ? ValidationErrorBody : Type.Object(ErrorBody.properties, { description: errorDescriptions[status], additionalProperties: true })
  }
  return responses
}

export const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 })

export const PageQuery = {
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Page size, 1 to 100.' }),
  // Any count of items, up to the largest a JSON number holds exactly (PostgreSQL's bigint goes further).
  offset: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: 'Number of items skipped.' }),
}

/** `{items, total, limit, offset}`, the list envelope of §4.2/§4.3. */
export function Page<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    total: Type.Integer({ description: 'Number of items matching the filters, over all pages.' }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  })
}

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** A reference shown by id and name, `{id, name}` (§2.3, §2.4). */
export const Named = Type.Object({ id: Type.Integer(), name: Type.String() })

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-22T09:15:02.123+00:00'] })
