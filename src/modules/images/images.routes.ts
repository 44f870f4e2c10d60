import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { locationHeader, rateLimited, rateLimitedErrorResponses, rateLimitHeaders } from '../../lib/schemas.js'
import { apiKeySecurity } from '../../plugins/auth.js'
import { THUMBNAIL_WIDTH } from './image-processing.js'
import { ImageByUrl, ImageIdParams, ImageListQuery, ImageUpdate, ImageUploadForm, PropertyImage } from './images.schemas.js'
import { readUploadForm } from './photo-upload.js'

const tenantRoute = { tags: ['Images'], security: apiKeySecurity }
/** The 409s every change of a photo can answer, said once for the four routes that change one. */
const PHOTOS_FROZEN = 'A closed listing’s photos, or those of a listing its agency’s suspension holds, cannot change (409).'

/** Photos of the tenant's properties. Registered behind `authenticate`. */
const imagesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { maxBytes } = app.config.images

  app.get(
    '/property-images',
    {
      schema: {
        ...tenantRoute,
        operationId: 'listImages',
        summary: 'The agency’s photos, by property and display order',
        description: 'A plain array (no wrapper), ordered by property, `sort_order`, id.',
        querystring: ImageListQuery,
        response: { 200: rateLimited(Type.Array(PropertyImage)), ...rateLimitedErrorResponses(401, 422, 429) },
      },
    },
    async (request) => app.services.images.list(request.tenant.id, request.query.property_id),
  )

  // Multipart is parsed on the upload's route alone: sent to another, a form is a 415 like any
  // body that is not JSON. One file per request; busboy stops reading past maxBytes, so memory
  // stays bounded.
  await app.register(async (uploads) => {
    await uploads.register(multipart, { limits: { fileSize: maxBytes, files: 1, fields: 5, fieldSize: 64, parts: 8, headerPairs: 50 } })

    uploads.post(
      '/property-images/upload',
      {
        schema: {
          ...tenantRoute,
          operationId: 'uploadImage',
          summary: 'Upload a photo of one of the agency’s properties',
          description: `multipart/form-data with \`file\` (JPEG, PNG or WebP, decided from the bytes; at most ${maxBytes} bytes and ${app.config.images.maxPixels} pixels), \`property_id\` and \`sort_order\` (default 0). The photo is re-encoded without metadata (no EXIF or GPS), upright, at most ${app.config.images.maxEdge} px on its longer side (a smaller one keeps its size); a ${THUMBNAIL_WIDTH} px wide thumbnail is made. At most ${app.config.images.perProperty} photos per property. ${PHOTOS_FROZEN}`,
          consumes: ['multipart/form-data'],
          body: ImageUploadForm,
          response: {
            201: rateLimited(PropertyImage, locationHeader('The new photo, `/property-images/{image_id}`.')),
            ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429),
          },
        },
        // The body is a stream read by the handler; the schema above documents it.
        validatorCompiler: () => () => true,
      },
      async (request, reply) => {
        const image = await app.services.images.upload(request.tenant.id, () => readUploadForm(request, maxBytes))
        return reply.code(201).header('location', `/property-images/${image.id}`).send(image)
      },
    )
  })

  app.post(
    '/property-images',
    {
      schema: {
        ...tenantRoute,
        operationId: 'addImageFromUrl',
        summary: 'Add a photo by URL',
        description:
          'The service downloads the photo (10 s, size-capped, at most 3 redirects; only public addresses) and treats it as an upload. `source_url` keeps the address. A failed download, or an answer that is not a JPEG, PNG or WebP photo, is a 422 saying why. ' +
          PHOTOS_FROZEN,
        body: ImageByUrl,
        response: {
          201: rateLimited(PropertyImage, locationHeader('The new photo, `/property-images/{image_id}`.')),
          ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const { property_id, url, sort_order = 0 } = request.body
      const image = await app.services.images.addFromUrl(request.tenant.id, { propertyId: property_id, sortOrder: sort_order, url })
      return reply.code(201).header('location', `/property-images/${image.id}`).send(image)
    },
  )

  app.get(
    '/property-images/:image_id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'getImage',
        summary: 'One photo',
        description: 'A photo of another agency’s property answers 404, exactly like one that does not exist.',
        params: ImageIdParams,
        response: { 200: rateLimited(PropertyImage), ...rateLimitedErrorResponses(401, 404, 422, 429) },
      },
    },
    async (request) => app.services.images.get(request.tenant.id, request.params.image_id),
  )

  app.put(
    '/property-images/:image_id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'updateImage',
        summary: 'Change a photo’s display position',
        description: 'Photos are shown by `sort_order`, then by id; the catalogue’s thumbnail is the first of them. ' + PHOTOS_FROZEN,
        params: ImageIdParams,
        body: ImageUpdate,
        response: { 200: rateLimited(PropertyImage), ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429) },
      },
    },
    async (request) => app.services.images.updateSortOrder(request.tenant.id, request.params.image_id, request.body.sort_order),
  )

  app.delete(
    '/property-images/:image_id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'deleteImage',
        summary: 'Delete a photo and its files',
        description: `The photo and its small rendition are removed from storage. ${PHOTOS_FROZEN}`,
        params: ImageIdParams,
        response: {
          204: { type: 'null', description: 'Deleted.', headers: rateLimitHeaders },
          ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      await app.services.images.remove(request.tenant.id, request.params.image_id)
      return reply.code(204).send(null)
    },
  )
}

export default imagesRoutes
