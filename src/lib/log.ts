import { DrizzleQueryError } from 'drizzle-orm'
import pino, { type DestinationStream, type Logger, type LoggerOptions, type SerializedError } from 'pino'

/**
 * How every logger of the service writes an error and a request. Drizzle's error for a failed statement
 * names the statement's values in its message, and so in its stack: an owner's phone, an
 * e-mail address, the digest of an API key being checked. The log keeps the statement and the
 * database's own error, which say what failed, and leaves the values out.
 */
export const logSerializers = { err: serializeError, req: serializeRequest }

/** A process's logger (JSON lines on stdout unless another destination is given). */
export function createLogger(options: LoggerOptions, destination?: DestinationStream): Logger {
  const settings = { ...options, serializers: { ...options.serializers, ...logSerializers } }
  return destination ? pino(settings, destination) : pino(settings)
}

/**
 * Fields libraries copy onto their errors that may hold a secret, left out at any depth of a
 * logged error (withoutSecrets): Drizzle's statement `params`, ioredis's failed `command` (AUTH
 * carries REDIS_URL's password), and what S3 answers of a refused signature (the access key id,
 * the signed text).
 */
const SECRET_ERROR_FIELDS = [
  'params',
  'command',
  'AWSAccessKeyId',
  'StringToSign',
  'StringToSignBytes',
  'CanonicalRequest',
  'CanonicalRequestBytes',
  'SignatureProvided',
]

function serializeError(error: Error): SerializedError {
  const serialized = pino.stdSerializers.err(error)
  for (let link: unknown = error; link instanceof Error; link = link.cause) {
    if (!(link instanceof DrizzleQueryError)) continue
    // Exactly as Drizzle writes them after the statement, in its message and in every copy of it.
    const values = `\nparams: ${String(link.params)}`
    serialized.message = serialized.message.replaceAll(values, '')
    serialized.stack = serialized.stack.replaceAll(values, '')
  }
  return withoutSecrets(serialized, new Map()) as SerializedError
}

/**
 * A copy of what an error's serializer built, without SECRET_ERROR_FIELDS at any depth: the
 * errors of an AggregateError, another error held in a field, a cause that is not an Error.
 * Copied, never changed in place: a cause that is no Error is the application's own object.
 * A cycle stays a cycle (pino writes it as [Circular]).
 */
function withoutSecrets(value: unknown, copies: Map<object, unknown>): unknown {
  // Values the logger writes as they are (a time, bytes), with no fields of their own to leave out.
  if (value === null || typeof value !== 'object' || value instanceof Date || ArrayBuffer.isView(value)) return value
  const copied = copies.get(value)
  if (copied !== undefined) return copied
  if (Array.isArray(value)) {
    const list: unknown[] = []
    copies.set(value, list)
    for (const item of value) list.push(withoutSecrets(item, copies))
    return list
  }
  const object: Record<string, unknown> = {}
  copies.set(value, object)
  for (const [key, field] of Object.entries(value)) if (!SECRET_ERROR_FIELDS.includes(key)) object[key] = withoutSecrets(field, copies)
  return object
}

/** What Fastify's own serializer logs of a request, and the route it found. */
interface LoggedRequest {
  method?: string
  url?: string
  host?: string
  ip?: string
  socket?: { remotePort?: number }
  routeOptions?: { url?: string }
}

/**
 * A registration's lookup: its code with the e-mail in its query reads back the agency's API
 * key. Told by the route the request found, so every spelling of its URL that reaches it
 * (`/tenants/%72egister/…`) is told.
 */
export const REGISTRATION_LOOKUP_ROUTE = '/tenants/register/:request_code'

/**
 * A request as Fastify logs it, but for a URL that would let a reader of the log act as its
 * caller: the registration lookup (`GET /tenants/register/{code}?email=…`) answers the agency's
 * key while it is active, so it is logged as its path's template, without the code or the e-mail.
 */
function serializeRequest(request: LoggedRequest) {
  const lookup = request.routeOptions?.url === REGISTRATION_LOOKUP_ROUTE || namesARegistration(request.url)
  return {
    method: request.method,
    url: lookup ? '/tenants/register/{request_code}' : request.url,
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  }
}

/**
 * Whether a URL no route took as the lookup names a registration all the same: a browser's
 * CORS preflight of it (`OPTIONS`), another method, or a spelling of the path the router
 * refuses (`//tenants/register/…`, `/Tenants/…`). Its code and e-mail would read back the key.
 */
function namesARegistration(url: string | undefined): boolean {
  const path = (url ?? '').split('?')[0]!
  let decoded = path
  try {
    decoded = decodeURIComponent(path)
  } catch {
    // Not percent-encoding: read as written.
  }
  return /^\/+tenants\/+register\/+[^/]/i.test(decoded)
}
