import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TSchema } from 'typebox'
import { errorResponses, failureThrottleResponse, locationHeader, withResponseHeaders } from '../../lib/schemas.js'
import { adminKeySecurity } from '../../plugins/auth.js'
import { City, CityCreateBody, District, DistrictCreateBody, ResidentialComplex, ResidentialComplexCreateBody } from './reference.schemas.js'

const admin = { tags: ['Admin'], security: adminKeySecurity }
const failures = { ...errorResponses(400, 401, 409, 413, 415, 422), 429: failureThrottleResponse }
const created = <T extends TSchema>(schema: T, path: string) => withResponseHeaders(schema, locationHeader(`The new place, \`${path}\`.`))

/** Operators add places the shipped reference data lacks. Registered behind `authenticateAdmin`. */
const referenceAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/admin/cities',
    {
      schema: {
        ...admin,
        operationId: 'createCity',
        summary: 'Add a city',
        description: 'The country must be one whose phone numbers the service knows. A city with the same name, country and region is a 409.',
        body: CityCreateBody,
        response: { 201: created(City, '/cities/{id}'), ...failures },
      },
    },
    async (request, reply) => {
      const city = await app.services.reference.addCity(request.body)
      return reply.code(201).header('location', `/cities/${city.id}`).send(city)
    },
  )

  app.post(
    '/admin/districts',
    {
      schema: {
        ...admin,
        operationId: 'createDistrict',
        summary: 'Add a district to a city',
        description: 'The city must exist (otherwise 422); a district of the same name in that city is a 409.',
        body: DistrictCreateBody,
        response: { 201: created(District, '/districts/{id}'), ...failures },
      },
    },
    async (request, reply) => {
      const district = await app.services.reference.addDistrict(request.body)
      return reply.code(201).header('location', `/districts/${district.id}`).send(district)
    },
  )

  app.post(
    '/admin/residential-complexes',
    {
      schema: {
        ...admin,
        operationId: 'createResidentialComplex',
        summary: 'Add a residential complex to a city',
        description:
          'The city must exist, and the district, when given, must be in that city (otherwise 422); a complex of the same name in that city is a 409.',
        body: ResidentialComplexCreateBody,
        response: { 201: created(ResidentialComplex, '/residential-complexes/{id}'), ...failures },
      },
    },
    async (request, reply) => {
      const complex = await app.services.reference.addResidentialComplex(request.body)
      return reply.code(201).header('location', `/residential-complexes/${complex.id}`).send(complex)
    },
  )
}

export default referenceAdminRoutes
