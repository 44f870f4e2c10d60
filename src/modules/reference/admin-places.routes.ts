import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../lib/schemas.js'
import { adminKeySecurity } from '../../plugins/auth.js'
import { City, CityCreateBody, District, DistrictCreateBody, ResidentialComplex, ResidentialComplexCreateBody } from './reference.schemas.js'

const admin = { tags: ['Admin'], security: adminKeySecurity }
const failures = errorResponses(401, 409, 422)

/** Operators add places the shipped reference data lacks. Registered behind `authenticateAdmin`. */
const referenceAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/admin/cities',
    { schema: { ...admin, summary: 'Add a city', body: CityCreateBody, response: { 201: City, ...failures } } },
    async (request, reply) => {
      const city = await app.services.reference.addCity(request.body)
      return reply.code(201).header('location', `/cities/${city.id}`).send(city)
    },
  )

  app.post(
    '/admin/districts',
    { schema: { ...admin, summary: 'Add a district to a city', body: DistrictCreateBody, response: { 201: District, ...failures } } },
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
        summary: 'Add a residential complex to a city',
        body: ResidentialComplexCreateBody,
        response: { 201: ResidentialComplex, ...failures },
      },
    },
    async (request, reply) => {
      const complex = await app.services.reference.addResidentialComplex(request.body)
      return reply.code(201).header('location', `/residential-complexes/${complex.id}`).send(complex)
    },
  )
}

export default referenceAdminRoutes
