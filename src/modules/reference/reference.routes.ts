import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { errorResponses, Id } from '../../lib/schemas.js'
import { Attribute, ByCityQuery, CitiesQuery, City, District, NamedItem, PropertyStatus, ResidentialComplex } from './reference.schemas.js'

const reference = { tags: ['Reference'] }
/** Reference data changes rarely and is the same for everyone: let clients and CDNs keep it. */
const CACHE_CONTROL = 'public, max-age=300'

/** The public, read-only dictionaries. */

const referenceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.addHook('onSend', async (_request, reply) => {
    if (reply.statusCode === 200) reply.header('cache-control', CACHE_CONTROL)
  })

  app.get('/property-types', { schema: { ...reference, summary: 'Property types (fixed ids 1–5)', response: { 200: Type.Array(NamedItem) } } }, async () =>
    app.services.reference.propertyTypes(),
  )

  app.get('/deal-types', { schema: { ...reference, summary: 'Deal types (fixed ids 1–3)', response: { 200: Type.Array(NamedItem) } } }, async () =>
    app.services.reference.dealTypes(),
  )

  app.get(
    '/property-statuses',
    { schema: { ...reference, summary: 'Property statuses with their codes', response: { 200: Type.Array(PropertyStatus) } } },
    async () => app.services.reference.propertyStatuses(),
  )

  app.get(
    '/cities',
    {
      schema: {
        ...reference,
        summary: 'Cities',
        querystring: CitiesQuery,
        response: { 200: Type.Array(City), ...errorResponses(422) },
      },
    },
    async (request) => app.services.reference.cities(request.query.country),
  )

  app.get(
    '/districts',
    {
      schema: {
        ...reference,
        summary: 'Districts, optionally of one city',
        querystring: ByCityQuery,
        response: { 200: Type.Array(District), ...errorResponses(422) },
      },
    },
    async (request) => app.services.reference.districts(request.query.city_id),
  )

  app.get(
    '/residential-complexes',
    {
      schema: {
        ...reference,
        summary: 'Residential complexes, optionally of one city',
        querystring: ByCityQuery,
        response: { 200: Type.Array(ResidentialComplex), ...errorResponses(422) },
      },
    },
    async (request) => app.services.reference.residentialComplexes(request.query.city_id),
  )

  const IdParams = Type.Object({ id: Id })

  app.get(
    '/cities/:id',
    { schema: { ...reference, summary: 'One city', params: IdParams, response: { 200: City, ...errorResponses(404, 422) } } },
    async (request) => app.services.reference.city(request.params.id),
  )

  app.get(
    '/districts/:id',
    { schema: { ...reference, summary: 'One district', params: IdParams, response: { 200: District, ...errorResponses(404, 422) } } },
    async (request) => app.services.reference.district(request.params.id),
  )

  app.get(
    '/residential-complexes/:id',
    {
      schema: {
        ...reference,
        summary: 'One residential complex',
        params: IdParams,
        response: { 200: ResidentialComplex, ...errorResponses(404, 422) },
      },
    },
    async (request) => app.services.reference.residentialComplex(request.params.id),
  )

  app.get(
    '/attributes',
    {
      schema: {
        ...reference,
        summary: 'The attribute catalogue: what `attributes` of a property may hold',
        description:
          'Values are always sent as strings: `number` a decimal, `integer` a whole number, `bool` `true`/`false`, `enum` one of `allowed_values` exactly.',
        response: { 200: Type.Array(Attribute) },
      },
    },
    async () => app.services.reference.attributes(),
  )
}

export default referenceRoutes
