import type { FastifyInstance } from 'fastify'
import { ApiError } from '../lib/errors.js'
import { bodyMayBeLeftOut } from './validation.js'

/**
 * JSON bodies through Fastify's own parser (which refuses `__proto__` and
 * `constructor.prototype` keys, against prototype poisoning), with two answers it lacks:
 * - some clients label every request JSON, a DELETE or a bare POST included; with nothing in
 *   it, such a request has no body, not an empty and invalid one, where the operation may be
 *   sent without one (elsewhere Fastify's "empty body" answer says what is missing);
 * - JSON that parses but names a forbidden key is a 422 that says so, not "not valid JSON".
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string
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
