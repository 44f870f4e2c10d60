import contentType from 'content-type'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from '../lib/errors.js'
import { bodyMayBeLeftOut } from './validation.js'

/** Charsets whose texts are the same bytes in UTF-8: ASCII is a part of it. */
const UTF8_BYTES = new Set(['utf-8', 'utf8', 'us-ascii', 'ascii'])

/** JSON is UTF-8 (RFC 8259 §8.1); a byte that is not is refused, not read as U+FFFD and stored so. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * JSON bodies through Fastify's own parser (which refuses `__proto__` and
 * `constructor.prototype` keys, against prototype poisoning), with the answers it lacks:
 * - some clients label every request JSON, a DELETE or a bare POST included; with nothing in
 *   it, such a request has no body, not an empty and invalid one, where the operation may be
 *   sent without one (elsewhere Fastify's "empty body" answer says what is missing);
 * - JSON that parses but names a forbidden key is a 422 that says so, not "not valid JSON";
 * - a body in another charset than UTF-8 is a 415, and bytes that are not UTF-8 a 400: either
 *   would otherwise be read as UTF-8 and stored with U+FFFD in place of its letters.
 * (A compressed body of any type is refused before, by refuseEncodedBody.)
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const charset = charsetOf(request)
    if (charset !== undefined && !UTF8_BYTES.has(charset)) {
      return done(new ApiError('unsupported_media_type', `JSON is read in UTF-8 only, and this body says it is in ${charset}: send it in UTF-8.`), undefined)
    }
    let text: string
    try {
      text = utf8.decode(body as Buffer)
    } catch {
      return done(new ApiError('bad_request', 'The request body is not valid UTF-8 text, which JSON must be.'), undefined)
    }
    if (text === '' && bodyMayBeLeftOut(request.routeOptions.schema?.body)) return done(null, undefined)
    void parseJson(request, text, (error, value) => {
      if (error && isJson(text)) {
        const problem = { loc: ['body'], msg: 'names a field __proto__ or constructor.prototype, which this API does not have' }
        return done(ApiError.validation([problem], `The request body ${problem.msg}.`), undefined)
      }
      done(error, value)
    })
  })
}

function isJson(text: string): boolean {
  try {
    // Fastify's parser skips a byte order mark; JSON.parse does not.
    JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
    return true
  } catch {
    return false
  }
}

/** The charset the request's Content-Type names, in lower case; undefined when it names none. */
function charsetOf(request: FastifyRequest): string | undefined {
  try {
    return contentType.parse(request).parameters.charset?.toLowerCase()
  } catch {
    // A header Fastify took as JSON but too loose for the strict grammar: it names no charset we can read.
    return undefined
  }
}

/**
 * onRequest hook: a body sent compressed (`Content-Encoding: gzip`) is a 415 that says so, not a
 * body that does not parse. Only where a body is read (not GET, HEAD or OPTIONS).
 */
export async function refuseEncodedBody(request: FastifyRequest): Promise<void> {
  if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS') return
  const codings = (request.headers['content-encoding'] ?? '').split(',').map((coding) => coding.trim().toLowerCase())
  const encoding = codings.filter((coding) => coding !== '' && coding !== 'identity').join(', ')
  if (encoding === '') return
  const length = request.headers['content-length']
  if (request.headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return
  throw new ApiError('unsupported_media_type', `Request bodies are taken uncompressed: send this one without its Content-Encoding (${encoding}).`)
}
