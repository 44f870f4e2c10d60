import type { FastifyInstance } from 'fastify'
import buildSerializer from 'fast-json-stringify'

type Serializer = (data: unknown) => string

/**
 * Response serializers by schema, for the whole process. Building one generates and compiles
 * code, about a fifth of a second for all the routes; an app built after the first (a test
 * file's, in a process that runs many) reuses them. Keyed by the schema's JSON, since routes
 * build some response schemas as they register (a body with its headers), and what
 * fast-json-stringify reads of a schema is what its JSON holds.
 */
const serializers = new Map<string, Serializer>()

export function installSerializers(app: FastifyInstance): void {
  app.setSerializerCompiler(({ schema }) => {
    const key = JSON.stringify(schema)
    let serializer = serializers.get(key)
    if (!serializer) {
      serializer = buildSerializer(schema as buildSerializer.AnySchema) as Serializer
      serializers.set(key, serializer)
    }
    return serializer
  })
}
