/**
 * Named schemas for the OpenAPI document. Route schemas stay plain TypeBox objects, so
 * handlers keep their static types and Fastify compiles them as before; a subschema with a
 * `title` is a named type of the API. For the document, each named subschema is listed once
 * under `components.schemas` by its title and replaced by a `$ref` wherever it is used, so
 * generated clients get types with names.
 */

type Schema = Record<string, unknown>

/** Keys of a route's response entry that describe the answer, not its body. */
const RESPONSE_KEYS = ['headers', 'x-response-description'] as const

const isObject = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value)

export const componentRef = (name: string) => `#/components/schemas/${name}`

/** The named schemas met so far, by title, each with its own named subschemas as references. */
export class NamedSchemas {
  readonly schemas: Record<string, Schema> = {}

  /** The schema with every named subschema (itself included) as a `$ref`, collecting them. */
  refer(schema: unknown): unknown {
    if (Array.isArray(schema)) return schema.map((item) => this.refer(item))
    if (!isObject(schema)) return schema
    const name = schema.title
    if (typeof name === 'string') {
      this.add(name, schema)
      return { $ref: componentRef(name) }
    }
    return this.referInside(schema)
  }

  /** Like `refer`, but the schema itself stays inline (a query or path schema must be an object). */
  referInside(schema: Schema): Schema {
    const copy: Schema = { ...integerFormat(schema), ...impliedMaxLength(schema) }
    for (const [key, value] of Object.entries(schema)) {
      // `examples`, `default`, `enum` and `const` hold values, not schemas.
      copy[key] = VALUE_KEYS.has(key) ? value : this.refer(value)
    }
    return copy
  }

  private add(name: string, schema: Schema): void {
    const body = this.referInside(withoutResponseKeys(schema))
    const known = this.schemas[name]
    if (known && JSON.stringify(known) !== JSON.stringify(body)) {
      throw new Error(`Two different schemas are named ${name} in the OpenAPI document; give one another title.`)
    }
    this.schemas[name] = body
  }
}

const INT32 = { min: -2_147_483_648, max: 2_147_483_647 }

/** An integer's `int32`/`int64` format, as its bounds imply (kept out of the validated schemas). */
function integerFormat(schema: Schema): Schema {
  if (schema.type !== 'integer' || schema.format !== undefined) return {}
  const { minimum, maximum } = schema as { minimum?: number; maximum?: number }
  const fits = minimum !== undefined && maximum !== undefined && minimum >= INT32.min && maximum <= INT32.max
  return { format: fits ? 'int32' : 'int64' }
}

/**
 * The maxLength a string's pattern already fixes (`^[A-Z]{2}$`: 2), for the document only:
 * in the validated schema a second bound would only change which failure is reported.
 */
function impliedMaxLength(schema: Schema): Schema {
  if (schema.type !== 'string' || schema.maxLength !== undefined || typeof schema.pattern !== 'string') return {}
  const fixed = /^\^\[[^\]]+\]\{(\d+)\}\$$/.exec(schema.pattern)
  return fixed ? { maxLength: Number(fixed[1]) } : {}
}

const VALUE_KEYS = new Set(['examples', 'example', 'default', 'enum', 'const', 'discriminator'])

function withoutResponseKeys(schema: Schema): Schema {
  const copy = { ...schema }
  for (const key of RESPONSE_KEYS) delete copy[key]
  return copy
}

const defaultDescriptions: Record<string, string> = { '200': 'OK.', '201': 'Created.', '204': 'No content.', '304': 'Not modified.' }

export interface RouteSchema {
  body?: unknown
  querystring?: unknown
  params?: unknown
  headers?: unknown
  response?: Record<string, unknown>
  [key: string]: unknown
}

/**
 * A route schema as the document shows it: named subschemas as references, and each
 * response's description and headers kept beside its body's reference.
 */
export function documentedRouteSchema(schema: RouteSchema, named: NamedSchemas): RouteSchema {
  const documented: RouteSchema = { ...schema }
  if (schema.body !== undefined) documented.body = named.refer(schema.body)
  for (const part of ['querystring', 'params', 'headers'] as const) {
    const value = schema[part]
    if (isObject(value)) documented[part] = named.referInside(value)
  }
  if (schema.response) {
    documented.response = Object.fromEntries(Object.entries(schema.response).map(([status, response]) => [status, documentedResponse(status, response, named)]))
  }
  return documented
}

function documentedResponse(status: string, response: unknown, named: NamedSchemas): unknown {
  if (!isObject(response)) return response
  const description = response['x-response-description'] ?? response.description ?? defaultDescriptions[status]
  const headers = response.headers
  const body = named.refer(withoutResponseKeys(response)) as Schema
  return { ...body, ...(description === undefined ? {} : { description }), ...(headers === undefined ? {} : { headers }) }
}
