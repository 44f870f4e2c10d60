import swagger from '@fastify/swagger'
import type { FastifyInstance, FastifySchema } from 'fastify'
import type { OpenAPIV3_1 } from 'openapi-types'
import { shareRepeatedHeaders, type DocumentWithHeaders } from './headers.js'
import { shareRepeatedResponses, type DocumentWithResponses } from './responses.js'
import { documentedRouteSchema, NamedSchemas, type RouteSchema } from './components.js'
import { bodyMayBeLeftOut } from '../plugins/validation.js'

export interface DocumentOptions {
  /** The name of the decorator that builds the document (`swagger`, `adminSwagger`). */
  decorator: string
  info: OpenAPIV3_1.InfoObject
  servers: OpenAPIV3_1.ServerObject[]
  securitySchemes: Record<string, OpenAPIV3_1.SecuritySchemeObject>
  tags: OpenAPIV3_1.TagObject[]
  /** Which routes of the scope the document describes, by URL. */
  describes: (url: string) => boolean
  /** The top-level `webhooks` section, built with the document's named schemas. */
  webhooks?: (named: NamedSchemas) => Record<string, { post: Record<string, unknown> }>
}

interface QuerySchema {
  properties?: Record<string, { default?: unknown }>
  required?: string[]
}

/**
 * A query parameter with a default (`limit`, `offset`…) is optional to a client: the schema
 * lists it as required only so that ajv fills the default in and handlers always see it set.
 */
function defaultedQueryIsOptional(schema: FastifySchema): FastifySchema {
  const query = schema.querystring as QuerySchema | undefined
  if (!query?.required || !query.properties) return schema
  const properties = query.properties
  const required = query.required.filter((name) => properties[name]?.default === undefined)
  return { ...schema, querystring: { ...query, required } }
}

/**
 * Registers an OpenAPI 3.1 document of the routes added to `app` from now on. @fastify/swagger
 * reads `components.schemas` before it visits the routes, so the routes' named schemas are
 * collected first, from the schemas kept as routes are added. Only then: a process that never
 * serves the document (a worker, most of a test's apps) never pays for walking every schema.
 */
export async function registerOpenApiDocument(app: FastifyInstance, options: DocumentOptions): Promise<void> {
  const named = new NamedSchemas()
  const document = (schema: FastifySchema) => documentedRouteSchema(defaultedQueryIsOptional(schema) as RouteSchema, named) as FastifySchema
  const notYetNamed: FastifySchema[] = []
  app.addHook('onRoute', (route) => {
    if (route.schema && !route.schema.hide && options.describes(route.url)) notYetNamed.push(route.schema)
  })
  const webhooks = options.webhooks?.(named)
  const components = {
    securitySchemes: options.securitySchemes,
    // Read when the document is built.
    get schemas() {
      for (const schema of notYetNamed.splice(0)) document(schema)
      return named.schemas as Record<string, OpenAPIV3_1.SchemaObject>
    },
  }

  await app.register(swagger, {
    decorator: options.decorator,
    openapi: {
      openapi: '3.1.0',
      info: options.info,
      servers: options.servers,
      components,
      tags: options.tags,
      ...(webhooks ? { webhooks: webhooks as OpenAPIV3_1.Document['webhooks'] } : {}),
    },
    // Headers first: a response is shared only if declared the same way everywhere, their references included.
    transformObject: (built) =>
      'openapiObject' in built
        ? shareRepeatedResponses(
            shareRepeatedHeaders(optionalBodiesNotRequired(built.openapiObject as DocumentWithHeaders & DocumentWithResponses & DocumentWithBodies)),
          )
        : built.swaggerObject,
    transform: ({ schema, url }) => {
      // A route without a schema has none to change (swagger passes it as undefined).
      const given = schema as FastifySchema | undefined
      if (!options.describes(url)) return { schema: { ...given, hide: true }, url }
      return { schema: given ? document(given) : given!, url }
    },
  })
}

interface BodySchema {
  required?: unknown[]
  minProperties?: number
}

interface DocumentWithBodies {
  paths?: Record<string, Record<string, { requestBody?: { required?: boolean; content?: Record<string, { schema?: BodySchema & { $ref?: string } }> } }>>
  components?: { schemas?: Record<string, BodySchema> }
}

/**
 * @fastify/swagger marks every declared body required; one whose fields are all optional may
 * be left out (an operator's rejection, creating an API key, a PATCH: `leftOutBodiesAsEmpty`),
 * and a client generated from the document must be able to.
 */
function optionalBodiesNotRequired<T extends DocumentWithBodies>(document: T): T {
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      const body = operation.requestBody
      const json = body?.content?.['application/json']?.schema
      if (!body || !json) continue
      const schema = json.$ref ? document.components?.schemas?.[json.$ref.split('/').pop()!] : json
      // Left out, a body is taken as `{}`: one that must name a field (a PATCH) is required all the same.
      if (schema && bodyMayBeLeftOut(schema) && !(schema.minProperties ?? 0)) body.required = false
    }
  }
  return document
}
