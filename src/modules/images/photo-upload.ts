import type { Readable } from 'node:stream'
import type { FastifyRequest } from 'fastify'
import { ApiError, type FieldError } from '../../lib/errors.js'
import { detectImageType, tooLarge, TYPE_SNIFF_BYTES } from './image-processing.js'
import { SORT_ORDER_RANGE } from './images.schemas.js'
import type { NewPhoto } from './images.service.js'

const UPLOAD_FIELDS = new Set(['file', 'property_id', 'sort_order'])

/**
 * Reads POST /property-images/upload's multipart form: one `file`, `property_id` and an
 * optional `sort_order` (default 0). Every problem with the fields is reported at once; a file
 * that is not a photo is refused on its first bytes, and one over `maxBytes` is a 413.
 */
export async function readUploadForm(request: FastifyRequest, maxBytes: number): Promise<NewPhoto> {
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
  return { propertyId: propertyId!, sortOrder: sortOrder!, bytes: bytes! }
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
