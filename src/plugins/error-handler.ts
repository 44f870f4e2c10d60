import { randomUUID } from 'node:crypto'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { isDatabaseUnavailable, isPoolSaturated, isStatementCutShort, type DatabaseAvailability } from '../db/availability.js'
import { isTransactionConflict } from '../db/conflicts.js'
import { clientHasGone } from '../lib/client-connection.js'
import { ApiError, cut, errorStatus, MAX_TEXT_LENGTH } from '../lib/errors.js'
import { EXPOSED_HEADERS, RAW_SECURITY_HEADER_LINES } from './browser-policy.js'
import { closeLingering, isAnsweredAndClosing } from './connection-closing.js'
import { describeValidationFailure, notFoundInPath } from './validation.js'

/**
 * The one place that turns anything thrown into the `{"detail": ...}` body of every error. Deliberate
 * errors are ApiErrors; Fastify's own 4xx errors get a sentence of ours; database errors are
 * mapped by SQLSTATE; a database that cannot be reached is a 503, logged once for the whole
 * outage by `availability`; a client that went away mid-request is logged at info, as nothing
 * went wrong here; everything else is a 500 whose message stays in the log.
 */
export function installErrorHandlers(app: FastifyInstance, availability: DatabaseAvailability): void {
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (isClientDisconnect(request, error)) {
      // Logged at info when the response closes (the onRequest hook below). Nobody reads this
      // answer; it ends the request's lifecycle like any other.
      request.log.debug({ err: error }, 'the request body ended with the connection')
      return sendError(reply, 400, { detail: 'The connection closed before the request arrived whole.' })
    }
    if (!(error instanceof ApiError) && isDatabaseUnavailable(error)) {
      availability.failed(error)
      if (isPoolSaturated(error)) request.log.warn({ status: 503 }, 'request refused: every database connection of the process stayed busy')
      else request.log.info({ status: 503 }, 'request refused: the database is unreachable')
      return sendError(reply, errorStatus.unavailable, { detail: SERVICE_UNAVAILABLE }, { 'retry-after': String(RETRY_AFTER_S) })
    }
    // The database answers but cut the statement short (a maintenance lock held past
    // DATABASE_STATEMENT_TIMEOUT_MS, say): no outage, and nothing the client did wrong.
    if (!(error instanceof ApiError) && isStatementCutShort(error)) {
      request.log.warn({ err: error, status: 503 }, 'request refused: the database cut its statement short')
      return sendError(reply, errorStatus.unavailable, { detail: STATEMENT_CUT_SHORT }, { 'retry-after': String(RETRY_AFTER_S) })
    }
    const { status, body, headers } = describeError(error, (request.routeOptions.schema as { consumes?: string[] } | undefined)?.consumes)
    if (status >= 500) request.log.error({ err: error }, 'request failed')
    else request.log.info({ status, detail: body.detail }, 'request rejected')
    return sendError(reply, status, body, headers)
  })

  // A client that disconnects or aborts before its answer is written is no failure here: one
  // line at info. (A response also closes once its answer is written, after 'finish'.)
  app.addHook('onRequest', async (request, reply) => {
    let answered = false
    reply.raw.once('finish', () => (answered = true))
    reply.raw.once('close', () => {
      if (!answered) request.log.info('request abandoned: the client closed the connection before the answer')
    })
  })

  // Scanning for routes is a failure like guessing a key: an address past its failures gets a 429
  // here too (the failure throttle is decorated later, by the time a request arrives). A route
  // that found nothing to serve (a photo since deleted) is not a scan, and is not counted.
  app.setNotFoundHandler(async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!
    if (!app.findRoute({ method: request.method, url: path })) {
      // Taken before answering, as a wrong key's is: a scan sent all at once is capped too.
      const failure = await app.failureThrottle.reserve(request)
      failure.keep()
    }
    // Also where a route found nothing to serve: /metrics without its token must look unknown.
    const detail = `There is no ${request.method} ${path} route.`
    request.log.info({ status: 404, detail }, 'request rejected')
    return sendError(reply, 404, { detail })
  })
}

/**
 * Fastify's `frameworkErrors`: a path the router cannot decode (`/mls/properties/%FF`) fails
 * before any route, hook or error handler, so it is answered here, in the same shape as the
 * rest and with the headers every answer carries, which no hook adds to it: its X-Request-Id,
 * the browser policy, and `*` for CORS (no route is known, and an error tells nothing).
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  void reply.header('x-request-id', request.id)
  for (const line of RAW_SECURITY_HEADER_LINES) {
    const colon = line.indexOf(': ')
    void reply.header(line.slice(0, colon), line.slice(colon + 2))
  }
  void reply.header('access-control-allow-origin', '*').header('access-control-expose-headers', EXPOSED_HEADERS.join(', '))
  const detail =
    error.code === 'FST_ERR_BAD_URL'
      ? 'The request path is not a valid URL: a % must begin a percent-encoded UTF-8 character.'
      : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? 'A value in the request path is too long.'
        : sentence(error.message)
  request.log.info({ status: 400, detail }, 'request rejected')
  void sendError(reply, 400, { detail })
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses (raw non-ASCII bytes in
 * the URL, a malformed header) never becomes a request, so the answer is written to the socket,
 * as Fastify's own handler does, with a `{"detail"}` body. The connection then closes lingering,
 * as the rest of what the client sends may still be arriving: destroyed at once, it would be
 * reset, and the client would lose the answer.
 */
export function clientErrorHandler(this: FastifyInstance | undefined, error: Error & { code?: string }, socket: Socket): void {
  // A reset connection is gone: nothing to answer. One that has had its last answer (the parser
  // reports every later chunk too) is closing already.
  if (error.code === 'ECONNRESET' || socket.destroyed || isAnsweredAndClosing(socket)) return
  const [status, reason, detail] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'Request Timeout', 'The request did not arrive in time.']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'The request headers are too large.']
        : error.code === 'HPE_INVALID_URL'
          ? [400, 'Bad Request', 'The request URL is not valid: characters outside ASCII must be percent-encoded.']
          : [400, 'Bad Request', 'The request is not valid HTTP.']
  const body = JSON.stringify({ detail })
  if (!socket.writable) {
    socket.destroy(error)
    return
  }
  // A request id of its own: the caller's, if it sent one, was never read. Logged as every
  // refused request is (Fastify binds `this` to the app).
  const requestId = randomUUID()
  this?.log.info({ reqId: requestId, status, detail }, 'request rejected')
  const headers = [
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Content-Type: application/json; charset=utf-8',
    `X-Request-Id: ${requestId}`,
    ...RAW_SECURITY_HEADER_LINES,
    'Connection: close',
  ]
  socket.write(`HTTP/1.1 ${status} ${reason}\r\n${headers.join('\r\n')}\r\n\r\n${body}`)
  closeLingering(socket)
}

/** What a request's own stream fails with when its client disconnects or aborts mid-body. */
const DISCONNECT_CODES = new Set(['ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE', 'ERR_STREAM_DESTROYED'])

/**
 * Whether `error` is the client going away rather than something failing here: the request's
 * body was cut off, and the error is one a stream reports when that happens. Any other error
 * is still a failure of ours and is logged as one.
 */
function isClientDisconnect(request: FastifyRequest, error: FastifyError): boolean {
  if (error instanceof ApiError || !clientHasGone(request)) return false
  return DISCONNECT_CODES.has(error.code) || error.message === 'aborted'
}

function sendError(reply: FastifyReply, status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  // A detail may repeat what the request wrote (a path, a name): cut to the length the document declares.
  const detail = typeof body.detail === 'string' ? cut(body.detail, MAX_TEXT_LENGTH) : body.detail
  // Plain JSON.stringify: a route's response schema must never strip `errors` or other extras.
  return reply
    .code(status)
    .headers(headers)
    .type('application/json; charset=utf-8')
    .serializer((payload) => JSON.stringify(payload))
    .send({ ...body, detail })
}

interface ErrorDescription {
  status: number
  body: { detail: string } & Record<string, unknown>
  headers?: Record<string, string>
}

const fastifyErrorDetails: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'The request body is not valid JSON.',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'The request body is empty; send a JSON object.',
  FST_ERR_CTP_BODY_TOO_LARGE: 'The request body is too large.',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'The Content-Length header does not match the body.',
}

/** What to answer for `error`; `consumes`, the route's body types when not JSON, for a 415. */
function describeError(error: FastifyError, consumes: string[] | undefined): ErrorDescription {
  if (error instanceof ApiError) {
    return { status: error.statusCode, body: { detail: error.message, ...error.extra }, headers: error.headers }
  }
  if (error.validation) {
    const missing = notFoundInPath(error.validation, error.validationContext)
    if (missing) return { status: 404, body: { detail: missing } }
    return { status: 422, body: describeValidationFailure(error.validation, error.validationContext) }
  }
  const database = describeDatabaseError(error)
  if (database) return database
  if (error instanceof SyntaxError && error.statusCode === 400) {
    return { status: 400, body: { detail: 'The request body is not valid JSON.' } }
  }
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return { status: 415, body: { detail: `This content type is not accepted here; send ${consumes?.join(' or ') ?? 'application/json'}.` } }
  }
  const status = error.statusCode ?? 500
  if (status >= 400 && status < 500) {
    return { status, body: { detail: fastifyErrorDetails[error.code] ?? sentence(error.message) } }
  }
  return { status: 500, body: { detail: 'Something went wrong on our side; the error has been logged.' } }
}

export const SERVICE_UNAVAILABLE = 'Service temporarily unavailable'
const STATEMENT_CUT_SHORT = 'The database could not finish this request in time; retry it shortly.'
/** What a 503 asks a client to wait: the outage is probed every second, and recovery takes a few. */
export const RETRY_AFTER_S = 5

function describeDatabaseError(error: Error): ErrorDescription | undefined {
  // Drizzle wraps driver errors; the SQLSTATE is on the cause.
  const cause = (error.cause ?? error) as { code?: unknown }
  const code = typeof cause.code === 'string' ? cause.code : undefined
  if (code === '23505') return { status: errorStatus.conflict, body: { detail: 'This would duplicate an existing record.' } }
  if (isTransactionConflict(error)) {
    return { status: errorStatus.conflict, body: { detail: 'The request collided with a concurrent change; retry it.' } }
  }
  return undefined
}

function sentence(message: string): string {
  const trimmed = message.trim()
  if (trimmed === '') return 'The request could not be processed.'
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`
}
