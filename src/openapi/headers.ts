type Json = Record<string, unknown>

export interface DocumentWithHeaders {
  paths?: Record<string, Record<string, { responses?: Record<string, { headers?: Record<string, Json> }> }>>
  components?: { headers?: Record<string, Json> }
}

/**
 * Response headers declared the same way on several responses (`RateLimit-*`, `Retry-After`,
 * `Cache-Control`…) become one entry of `components.headers`, referred to with `$ref`; a
 * header whose declaration varies (each `Location` says what it points to) stays inline.
 */
export function shareRepeatedHeaders<T extends DocumentWithHeaders>(document: T): T {
  const declarations = new Map<string, Json[]>()
  const everyHeaders = Object.values(document.paths ?? {}).flatMap((item) =>
    Object.values(item).flatMap((operation) => Object.values(operation.responses ?? {}).flatMap((response) => (response.headers ? [response.headers] : []))),
  )
  for (const headers of everyHeaders) {
    for (const [name, declaration] of Object.entries(headers)) declarations.set(name, [...(declarations.get(name) ?? []), declaration])
  }
  const shared: Record<string, Json> = {}
  for (const [name, all] of declarations) {
    const first = JSON.stringify(all[0])
    if (all.length > 1 && all.every((declaration) => JSON.stringify(declaration) === first)) shared[name] = all[0]!
  }
  for (const headers of everyHeaders) {
    for (const name of Object.keys(headers)) if (shared[name]) headers[name] = { $ref: `#/components/headers/${name}` }
  }
  if (Object.keys(shared).length > 0) document.components = { ...document.components, headers: { ...document.components?.headers, ...shared } }
  return document
}
