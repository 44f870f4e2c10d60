import type { FastifyInstance } from 'fastify'
import { ApiError } from '../lib/errors.js'

/** Methods whose routes here take no body. */
const BODILESS_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS'])

/**
 * JSON bodies through Fastify's own parser (which refuses `__proto__` and
 * `constructor.prototype` keys, against prototype poisoning), with two answers it lacks:
 * - some clients label every request JSON, a DELETE or a GET included; with nothing in it,
 *   such a request has no body, not an empty and invalid one;
 * - JSON that parses but names a forbidden key is a 422 that says so, not "not valid JSON".
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string
    if (text === '' && BODILESS_METHODS.has(request.method)) return done(null, undefined)
    void parseJson(request, text, (error, value) => {
      if (error && isJson(text)) {
        return done(new ApiError('validation_failed', 'The request body names a field __proto__ or constructor.prototype, which this API does not have.'), undefined)
      }
      done(error, value)
    })
  })
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
