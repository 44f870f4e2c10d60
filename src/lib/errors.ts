/**
 * The one error type the service throws on purpose. Its code, from a closed list, decides
 * the HTTP status; its message becomes the response's `detail` and must read as a sentence
 * a person understands. Anything else thrown is a bug: answered 500 with the message hidden.
 */
export const errorStatus = {
  bad_request: 400,
  unauthorized: 401,
  not_found: 404,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation_failed: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
} as const

export type ErrorCode = keyof typeof errorStatus

/** One field problem in a 422: where (`["body", "attributes", "rooms"]`) and what. */
export interface FieldError {
  loc: (string | number)[]
  msg: string
}

export class ApiError extends Error {
  override name = 'ApiError'
  readonly statusCode: number

  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra response fields beside `detail`, e.g. `errors` or `allowed_moves`. */
    readonly extra: Record<string, unknown> = {},
    /** Response headers that belong with this error, e.g. `Retry-After`. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.statusCode = errorStatus[code]
  }

  static notFound(message: string): ApiError {
    return new ApiError('not_found', message)
  }

  static conflict(message: string, extra: Record<string, unknown> = {}): ApiError {
    return new ApiError('conflict', message, extra)
  }

  static gone(message: string): ApiError {
    return new ApiError('gone', message)
  }

  /**
   * A 422 with field errors; `detail` summarises them so a person sees the problem at once.
   * What a request wrote (an unknown field's name can be any length) is cut to the lengths the
   * OpenAPI document declares for them; the error handler cuts `detail`.
   */
  static validation(errors: FieldError[], summary?: string): ApiError {
    const shown = shownFieldErrors(errors)
    return new ApiError('validation_failed', summary ?? describeFieldErrors(shown, errors.length), { errors: shown })
  }
}

/** The most problems a 422 lists: a body may hold a hundred thousand bad items, and its answer need not. The detail counts them all. */
export const MAX_FIELD_ERRORS = 100

/**
 * Field errors as the document declares them: the first MAX_FIELD_ERRORS, cut to the lengths it
 * gives (a `loc` may name what a request wrote, of any length).
 */
export function shownFieldErrors(errors: FieldError[]): FieldError[] {
  return errors.slice(0, MAX_FIELD_ERRORS).map(({ loc, msg }) => ({
    loc: loc.map((part) => (typeof part === 'string' ? cut(part, MAX_LOC_PART_LENGTH) : part)),
    msg: cut(msg, MAX_TEXT_LENGTH),
  }))
}

/** The longest `detail` and `msg`, and `loc` part, of an error body (lib/schemas.ts). */
export const MAX_TEXT_LENGTH = 2000
export const MAX_LOC_PART_LENGTH = 1000

/** The text, cut to `length` characters with an ellipsis if it is longer. */
/** The text, or its first `length - 1` UTF-16 units and an ellipsis; never half of a character that takes two. */
export const cut = (text: string, length: number) => {
  if (text.length <= length) return text
  const end = /[\uD800-\uDBFF]/.test(text[length - 2] ?? '') ? length - 2 : length - 1
  return `${text.slice(0, end)}…`
}

export const INVALID_API_KEY = 'Invalid or missing API key'
/** The detail of a missing property, in the catalogue and for another tenant's too (never a 403). */
export const PROPERTY_NOT_FOUND = 'Property not found'
/** The details of the other missing things, answered by their services and for ids no row can have (`PathId`). */
export const IMAGE_NOT_FOUND = 'Image not found'
export const FEED_NOT_FOUND = 'Feed not found'
export const FEED_RUN_NOT_FOUND = 'Feed run not found'
export const REGISTRATION_NOT_FOUND = 'Registration request not found'
export const TENANT_NOT_FOUND = 'Tenant not found'
export const API_KEY_NOT_FOUND = 'API key not found'
export const WEBHOOK_NOT_FOUND = 'Webhook not found'
export const CITY_NOT_FOUND = 'City not found'
export const DISTRICT_NOT_FOUND = 'District not found'
export const RESIDENTIAL_COMPLEX_NOT_FOUND = 'Residential complex not found'
/**
 * A request of a suspended agency's, let in just before the suspension committed, that reaches a
 * listing the suspension holds (docs/architecture.md#api-keys-and-suspension): refused, nothing changed.
 */
export const HELD_BY_SUSPENSION = 'The agency is suspended: its listings are held as they are until it is unsuspended.'
/** A change to a listing whose deal is closed, to its fields or its photos: a closed deal is final. */
export const DEAL_CLOSED = 'This listing’s deal is closed; it can no longer be changed.'

export function describeFieldErrors(errors: FieldError[], total = errors.length): string {
  const [first] = errors
  if (!first) return 'The request is not valid.'
  const where = first.loc.join('.')
  const others = total - 1
  const more = others === 0 ? '' : ` (and ${others} more problem${others === 1 ? '' : 's'})`
  return `Invalid ${where}: ${first.msg}${more}.`
}

/**
 * A sentence as a clause to follow a colon in another (`The feed could not be downloaded: …`):
 * its final period dropped and its first letter lowered, unless it starts with an acronym
 * ("URLs", "XML"), which keeps its capitals.
 */
export function asClause(sentence: string): string {
  const clause = sentence.replace(/\.$/, '')
  return /^\p{Lu}\p{Lu}/u.test(clause) ? clause : clause.charAt(0).toLowerCase() + clause.slice(1)
}
