import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type TSchema } from 'typebox'
import { seedDealTypes, seedPropertyStatuses, seedPropertyTypes } from '../../db/seed/dictionaries.js'
import { CITY_NOT_FOUND, DISTRICT_NOT_FOUND, RESIDENTIAL_COMPLEX_NOT_FOUND } from '../../lib/errors.js'
import { errorResponses, PathId, withResponseHeaders, header } from '../../lib/schemas.js'
import { attributeCatalogue } from './attribute-catalogue.js'
import { Attribute, ByCityQuery, CitiesQuery, City, District, NamedItem, PropertyStatus, ResidentialComplex } from './reference.schemas.js'

const reference = { tags: ['Reference'] }
/** Reference data changes rarely and is the same for everyone: let clients and CDNs keep it. */
const CACHE_CONTROL = 'public, max-age=300'
const cached = <T extends TSchema>(schema: T) =>
  withResponseHeaders(schema, { 'Cache-Control': header('Caches may keep the answer this long.', { type: 'string', enum: [CACHE_CONTROL] }) })

/** The public, read-only dictionaries. */

const referenceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.addHook('onSend', async (_request, reply) => {
    if (reply.statusCode === 200) reply.header('cache-control', CACHE_CONTROL)
  })

  app.get(
    '/property-types',
    {
      schema: {
        ...reference,
        operationId: 'listPropertyTypes',
        summary: 'Property types (fixed ids 1–5)',
        description: 'The ids are part of the contract: the catalogue filters by `property_type_id`.',
        response: { 200: cached(Type.Array(NamedItem, { maxItems: seedPropertyTypes.length })), ...errorResponses() },
      },
    },
    async () => app.services.reference.propertyTypes(),
  )

  app.get(
    '/deal-types',
    {
      schema: {
        ...reference,
        operationId: 'listDealTypes',
        summary: 'Deal types (fixed ids 1–3)',
        description: 'The ids are part of the contract: the catalogue filters by `deal_type_id`.',
        response: { 200: cached(Type.Array(NamedItem, { maxItems: seedDealTypes.length })), ...errorResponses() },
      },
    },
    async () => app.services.reference.dealTypes(),
  )

  app.get(
    '/property-statuses',
    {
      schema: {
        ...reference,
        operationId: 'listPropertyStatuses',
        summary: 'Property statuses with their codes',
        description: 'The five statuses a listing moves through, with stable codes (`pending_review`, `published`…) and their names.',
        response: { 200: cached(Type.Array(PropertyStatus, { maxItems: seedPropertyStatuses.length })), ...errorResponses() },
      },
    },
    async () => app.services.reference.propertyStatuses(),
  )

  app.get(
    '/cities',
    {
      schema: {
        ...reference,
        operationId: 'listCities',
        summary: 'Cities',
        description: 'Every city, or those of one `country`; operators may add more.',
        querystring: CitiesQuery,
        response: { 200: cached(Type.Array(City)), ...errorResponses(422) },
      },
    },
    async (request) => app.services.reference.cities(request.query.country),
  )

  app.get(
    '/districts',
    {
      schema: {
        ...reference,
        operationId: 'listDistricts',
        summary: 'Districts, optionally of one city',
        description: 'Every district, or those of one `city_id`; operators may add more.',
        querystring: ByCityQuery,
        response: { 200: cached(Type.Array(District)), ...errorResponses(422) },
      },
    },
    async (request) => app.services.reference.districts(request.query.city_id),
  )

  app.get(
    '/residential-complexes',
    {
      schema: {
        ...reference,
        operationId: 'listResidentialComplexes',
        summary: 'Residential complexes, optionally of one city',
        description: 'Every residential complex, or those of one `city_id`; operators may add more.',
        querystring: ByCityQuery,
        response: { 200: cached(Type.Array(ResidentialComplex)), ...errorResponses(422) },
      },
    },
    async (request) => app.services.reference.residentialComplexes(request.query.city_id),
  )

  const placeId = (notFound: string) => Type.Object({ id: PathId(notFound) })

  app.get(
    '/cities/:id',
    {
      schema: {
        ...reference,
        operationId: 'getCity',
        summary: 'One city',
        description: `An unknown id answers 404 \`${CITY_NOT_FOUND}\`.`,
        params: placeId(CITY_NOT_FOUND),
        response: { 200: cached(City), ...errorResponses(404, 422) },
      },
    },
    async (request) => app.services.reference.city(request.params.id),
  )

  app.get(
    '/districts/:id',
    {
      schema: {
        ...reference,
        operationId: 'getDistrict',
        summary: 'One district',
        description: `An unknown id answers 404 \`${DISTRICT_NOT_FOUND}\`.`,
        params: placeId(DISTRICT_NOT_FOUND),
        response: { 200: cached(District), ...errorResponses(404, 422) },
      },
    },
    async (request) => app.services.reference.district(request.params.id),
  )

  app.get(
    '/residential-complexes/:id',
    {
      schema: {
        ...reference,
        operationId: 'getResidentialComplex',
        summary: 'One residential complex',
        description: `An unknown id answers 404 \`${RESIDENTIAL_COMPLEX_NOT_FOUND}\`.`,
        params: placeId(RESIDENTIAL_COMPLEX_NOT_FOUND),
        response: { 200: cached(ResidentialComplex), ...errorResponses(404, 422) },
      },
    },
    async (request) => app.services.reference.residentialComplex(request.params.id),
  )

  app.get(
    '/attributes',
    {
      schema: {
        ...reference,
        operationId: 'listAttributes',
        summary: 'The attribute catalogue: what `attributes` of a property may hold',
        description:
          'Values are always sent as strings: `number` a decimal, `integer` a whole number, `bool` `true`/`false`, `enum` one of `allowed_values` exactly.',
        response: { 200: cached(Type.Array(Attribute, { maxItems: attributeCatalogue.length })), ...errorResponses() },
      },
    },
    async () => app.services.reference.attributes(),
  )
}

export default referenceRoutes
