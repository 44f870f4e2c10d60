/**
 * The parts of the OpenAPI document that tests read, as @fastify/swagger writes them. A schema
 * may be a `$ref` to components.schemas; tests that follow references say so.
 */
export interface OpenApiDocument {
  openapi: string
  info: { title: string; version: string; description?: string }
  paths: Record<string, Record<string, OpenApiOperation>>
  components: { securitySchemes: Record<string, { type: string; name?: string; in?: string }>; schemas: Record<string, JsonSchema> }
}

export interface OpenApiOperation {
  operationId?: string
  summary?: string
  description?: string
  tags?: string[]
  security?: Record<string, string[]>[]
  parameters?: OpenApiParameter[]
  requestBody?: { required?: boolean; content: Record<string, OpenApiMediaType> }
  responses: Record<string, OpenApiResponse>
}

export interface OpenApiParameter {
  name: string
  in: 'query' | 'header' | 'path' | 'cookie'
  required?: boolean
  description?: string
  schema: JsonSchema
}

export interface OpenApiResponse {
  description: string
  headers?: Record<string, { description?: string; schema: JsonSchema }>
  content?: Record<string, OpenApiMediaType>
}

export interface OpenApiMediaType {
  schema: JsonSchema
  example?: unknown
  examples?: Record<string, unknown>
}

export interface JsonSchema {
  type?: string | string[]
  format?: string
  enum?: unknown[]
  default?: unknown
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  minimum?: number
  maximum?: number
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  $ref?: string
  description?: string
  examples?: unknown[]
}
