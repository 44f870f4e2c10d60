import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError } from '../../lib/errors.js'
import { isSupportedCountry } from '../../lib/phone.js'
import { errorResponses } from '../../lib/schemas.js'
import { adminKeySecurity } from '../../plugins/auth.js'
import * as repository from './reference.repository.js'
import { City, CityCreateBody, District, DistrictCreateBody, ResidentialComplex, ResidentialComplexCreateBody } from './reference.schemas.js'

const admin = { tags: ['Admin'], security: adminKeySecurity }
const failures = errorResponses(401, 409, 422)

/** Operators add places the shipped reference data lacks (D4). Registered behind `authenticateAdmin`. */
const referenceAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const cityMustExist = async (cityId: number) => {
    if (!(await repository.findCity(app.db, cityId))) {
      throw ApiError.validation([{ loc: ['body', 'city_id'], msg: `there is no city with id ${cityId}` }])
    }
  }

  app.post(
    '/admin/cities',
    { schema: { ...admin, summary: 'Add a city', body: CityCreateBody, response: { 201: City, ...failures } } },
    async (request, reply) => {
      const { country, region, ...rest } = request.body
      if (!isSupportedCountry(country)) {
        throw ApiError.validation([{ loc: ['body', 'country'], msg: `"${country}" is not an ISO 3166-1 alpha-2 country code we know` }])
      }
      const city = await repository.insertCity(app.db, { ...rest, country, region: region ?? null })
      if (!city) throw ApiError.conflict('A city with this name already exists in this country and region.')
      return reply.code(201).header('location', `/cities/${city.id}`).send(city)
    },
  )

  app.post(
    '/admin/districts',
    { schema: { ...admin, summary: 'Add a district to a city', body: DistrictCreateBody, response: { 201: District, ...failures } } },
    async (request, reply) => {
      const { city_id: cityId, name } = request.body
      await cityMustExist(cityId)
      const district = await repository.insertDistrict(app.db, { cityId, name })
      if (!district) throw ApiError.conflict('This city already has a district with this name.')
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
      const { city_id: cityId, district_id: districtId, name } = request.body
      await cityMustExist(cityId)
      if (districtId != null && !(await repository.findDistrictInCity(app.db, districtId, cityId))) {
        throw ApiError.validation([{ loc: ['body', 'district_id'], msg: `there is no district with id ${districtId} in city ${cityId}` }])
      }
      const complex = await repository.insertResidentialComplex(app.db, { cityId, districtId: districtId ?? null, name })
      if (!complex) throw ApiError.conflict('This city already has a residential complex with this name.')
      return reply.code(201).header('location', `/residential-complexes/${complex.id}`).send(complex)
    },
  )
}

export default referenceAdminRoutes
