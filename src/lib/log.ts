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

function serializeError(error: Error): SerializedError {
  const serialized = pino.stdSerializers.err(error)
  for (let link: unknown = error; link instanceof Error; link = link.cause) {
    if (!(link instanceof DrizzleQueryError)) continue
    // Exactly as Drizzle writes them after the statement, in its message and in every copy of it.
    const values = `\nparams: ${String(link.params)}`
    serialized.message = serialized.message.replaceAll(values, '')
    serialized.stack = serialized.stack.replaceAll(values, '')
  }
  delete serialized.params
  return serialized
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
  return {
    method: request.method,
    url: request.routeOptions?.url === REGISTRATION_LOOKUP_ROUTE ? '/tenants/register/{request_code}' : request.url,
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  }
}
