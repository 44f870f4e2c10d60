import type { Readable } from 'node:stream'
import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ApiError, type FieldError } from '../../lib/errors.js'
import { locationHeader, rateLimited, rateLimitedErrorResponses, rateLimitHeaders } from '../../lib/schemas.js'
import { apiKeySecurity } from '../../plugins/auth.js'
import { detectImageType, tooLarge, TYPE_SNIFF_BYTES } from './image-processing.js'
import { ImageByUrl, ImageIdParams, ImageListQuery, ImageUpdate, ImageUploadForm, PropertyImage, SORT_ORDER_RANGE } from './images.schemas.js'

const tenantRoute = { tags: ['Images'], security: apiKeySecurity }
const UPLOAD_FIELDS = new Set(['file', 'property_id', 'sort_order'])

/** Photos of the tenant's properties (§4.1, D7). Registered behind `authenticate`. */
const imagesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { maxBytes } = app.config.images
  // One file per request; busboy stops reading past maxBytes, so memory stays bounded.
  await app.register(multipart, { limits: { fileSize: maxBytes, files: 1, fields: 5, fieldSize: 64, parts: 8, headerPairs: 50 } })

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
    async (request) => app.images.list(request.tenant.id, request.query.property_id),
  )

  app.post(
    '/property-images/upload',
    {
      schema: {
        ...tenantRoute,
        operationId: 'uploadImage',
        summary: 'Upload a photo of one of the agency’s properties',
        description: `multipart/form-data with \`file\` (JPEG, PNG or WebP, decided from the bytes; at most ${maxBytes} bytes and ${app.config.images.maxPixels} pixels), \`property_id\` and \`sort_order\` (default 0). The photo is re-encoded without metadata (no EXIF or GPS) and oriented; a ${400} px thumbnail is made. At most ${app.config.images.perProperty} photos per property.`,
        consumes: ['multipart/form-data'],
        body: ImageUploadForm,
        response: {
          201: rateLimited(PropertyImage, locationHeader('The new photo, `/property-images/{image_id}`.')),
          ...rateLimitedErrorResponses(401, 404, 413, 415, 422, 429),
        },
      },
      // The body is a stream read by the handler; the schema above documents it.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
      if (!request.isMultipart()) {
        throw new ApiError('unsupported_media_type', 'Send the photo as multipart/form-data with the fields file, property_id and sort_order.')
      }
      const fields = new Map<string, string>()
      let bytes: Buffer | undefined
      const errors: FieldError[] = []
      try {
        for await (const part of request.parts()) {
          if (!UPLOAD_FIELDS.has(part.fieldname)) {
            errors.push({ loc: ['body', part.fieldname], msg: 'is not a field of this form' })
            if (part.type === 'file') part.file.resume()
          } else if (part.type === 'file') {
            if (part.fieldname !== 'file') throw ApiError.validation([{ loc: ['body', part.fieldname], msg: 'must be a form field, not a file' }])
            bytes = await readPhoto(part.file)
          } else {
            fields.set(part.fieldname, String(part.value))
          }
        }
      } catch (error) {
        // busboy stops at IMAGE_MAX_BYTES and @fastify/multipart reports it with this code.
        if ((error as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge(maxBytes)
        throw error
      }
      const propertyId = integerField(fields.get('property_id'), 'property_id', errors, { min: 1, max: SORT_ORDER_RANGE.max })
      const sortOrder = fields.has('sort_order') ? integerField(fields.get('sort_order'), 'sort_order', errors, SORT_ORDER_RANGE) : 0
      if (bytes === undefined) errors.push({ loc: ['body', 'file'], msg: 'is required' })
      if (errors.length > 0) throw ApiError.validation(errors)
      const image = await app.images.add(request.tenant.id, { propertyId: propertyId!, sortOrder: sortOrder!, bytes: bytes! })
      return reply.code(201).header('location', `/property-images/${image.id}`).send(image)
    },
  )

  app.post(
    '/property-images',
    {
      schema: {
        ...tenantRoute,
        operationId: 'addImageFromUrl',
        summary: 'Add a photo by URL',
        description:
          'The service downloads the photo (10 s, size-capped, at most 3 redirects; only public addresses) and treats it as an upload. `source_url` keeps the address. A failed download, or an answer that is not a JPEG, PNG or WebP photo, is a 422 saying why.',
        body: ImageByUrl,
        response: {
          201: rateLimited(PropertyImage, locationHeader('The new photo, `/property-images/{image_id}`.')),
          ...rateLimitedErrorResponses(400, 401, 404, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const { property_id, url, sort_order = 0 } = request.body
      const image = await app.images.addFromUrl(request.tenant.id, { propertyId: property_id, sortOrder: sort_order, url })
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
    async (request) => app.images.get(request.tenant.id, request.params.image_id),
  )

  app.put(
    '/property-images/:image_id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'updateImage',
        summary: 'Change a photo’s display position',
        description: 'Photos are shown by `sort_order`, then by id; the catalogue’s thumbnail is the first of them.',
        params: ImageIdParams,
        body: ImageUpdate,
        response: { 200: rateLimited(PropertyImage), ...rateLimitedErrorResponses(400, 401, 404, 415, 422, 429) },
      },
    },
    async (request) => app.images.updateSortOrder(request.tenant.id, request.params.image_id, request.body.sort_order),
  )

  app.delete(
    '/property-images/:image_id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'deleteImage',
        summary: 'Delete a photo and its files',
        description: 'The photo and its small rendition are removed from storage.',
        params: ImageIdParams,
        response: { 204: { type: 'null', description: 'Deleted.', headers: rateLimitHeaders }, ...rateLimitedErrorResponses(401, 404, 422, 429) },
      },
    },
    async (request, reply) => {
      await app.images.remove(request.tenant.id, request.params.image_id)
      return reply.code(204).send(null)
    },
  )
}

/**
 * Reads the uploaded file into memory, at most IMAGE_MAX_BYTES (busboy cuts the stream
 * there). The type is checked on the first bytes, so a file that is not a photo is refused
 * (415) before the rest of it is read.
 */
async function readPhoto(file: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  let sniffed = false
  try {
    for await (const chunk of file as AsyncIterable<Buffer>) {
      chunks.push(chunk)
      size += chunk.length
      if (!sniffed && size >= TYPE_SNIFF_BYTES) {
        sniffed = true
        await detectImageType(Buffer.concat(chunks))
      }
    }
  } catch (error) {
    file.resume()
    throw error
  }
  if (!sniffed) await detectImageType(Buffer.concat(chunks))
  return Buffer.concat(chunks, size)
}

function integerField(raw: string | undefined, name: string, errors: FieldError[], range: { min: number; max: number }): number | undefined {
  if (raw === undefined) {
    errors.push({ loc: ['body', name], msg: 'is required' })
    return undefined
  }
  const value = Number(raw.trim())
  if (!/^\s*-?\d+\s*$/.test(raw) || value < range.min || value > range.max) {
    errors.push({ loc: ['body', name], msg: `must be a whole number from ${range.min} to ${range.max}` })
    return undefined
  }
  return value
}

export default imagesRoutes
