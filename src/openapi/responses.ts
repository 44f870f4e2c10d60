type Json = Record<string, unknown>

export interface DocumentWithResponses {
  paths?: Record<string, Record<string, { responses?: Record<string, Json> }>>
  components?: { responses?: Record<string, Json> }
}

/** Names of shared error answers, by status. */
const names: Record<string, string> = {
  '400': 'BadRequest',
  '401': 'Unauthorized',
  '404': 'NotFound',
  '409': 'Conflict',
  '410': 'Gone',
  '413': 'PayloadTooLarge',
  '415': 'UnsupportedMediaType',
  '422': 'ValidationFailed',
  '429': 'TooManyRequests',
  '500': 'InternalError',
  '503': 'Unavailable',
}

/**
 * The most common declaration of each error answer (a 401, a 429, a 500…) becomes one entry
 * of `components.responses`, named after its status, and the operations that declare it so
 * refer to it with `$ref`; the others keep theirs inline (a 404 without rate-limit headers
 * on a route that is not rate limited, the readiness probe's own 503).
 */
export function shareRepeatedResponses<T extends DocumentWithResponses>(document: T): T {
  const everyResponses = Object.values(document.paths ?? {}).flatMap((item) =>
    Object.values(item).flatMap((operation) => (operation.responses ? [operation.responses] : [])),
  )
  const shared: Record<string, Json> = {}
  for (const [status, name] of Object.entries(names)) {
    const counts = new Map<string, number>()
    for (const responses of everyResponses) {
      if (responses[status]) counts.set(JSON.stringify(responses[status]), (counts.get(JSON.stringify(responses[status])) ?? 0) + 1)
    }
    const [mostCommon, count] = [...counts].sort((a, b) => b[1] - a[1])[0] ?? []
    if (mostCommon !== undefined && count! > 1) shared[name] = JSON.parse(mostCommon) as Json
  }
  for (const responses of everyResponses) {
    for (const [status, response] of Object.entries(responses)) {
      const name = names[status]
      if (name && shared[name] && JSON.stringify(response) === JSON.stringify(shared[name])) responses[status] = { $ref: `#/components/responses/${name}` }
    }
  }
  if (Object.keys(shared).length > 0) document.components = { ...document.components, responses: { ...document.components?.responses, ...shared } }
  return document
}
