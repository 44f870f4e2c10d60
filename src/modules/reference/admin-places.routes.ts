import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TSchema } from 'typebox'
import { ApiError } from '../../lib/errors.js'
import { isSupportedCountry } from '../../lib/phone.js'
import { errorResponses, locationHeader, withResponseHeaders } from '../../lib/schemas.js'
import { adminKeySecurity } from '../../plugins/auth.js'
import * as repository from './reference.repository.js'
import { City, CityCreateBody, District, DistrictCreateBody, ResidentialComplex, ResidentialComplexCreateBody } from './reference.schemas.js'

const admin = { tags: ['Admin'], security: adminKeySecurity }
const failures = errorResponses(400, 401, 409, 415, 422)
const created = <T extends TSchema>(schema: T, path: string) => withResponseHeaders(schema, locationHeader(`The new place, \`${path}\`.`))

/** Operators add places the shipped reference data lacks (D4). Registered behind `authenticateAdmin`. */
const referenceAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const cityMustExist = async (cityId: number) => {
    if (!(await repository.findCity(app.db, cityId))) {
      throw ApiError.validation([{ loc: ['body', 'city_id'], msg: `there is no city with id ${cityId}` }])
    }
  }

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
        operationId: 'createResidentialComplex',
        summary: 'Add a residential complex to a city',
        description:
          'The city must exist, and the district, when given, must be in that city (otherwise 422); a complex of the same name in that city is a 409.',
        body: ResidentialComplexCreateBody,
        response: { 201: created(ResidentialComplex, '/residential-complexes/{id}'), ...failures },
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
