import type { MultipartFile } from '@fastify/multipart'
import type { FastifyRequest } from 'fastify'
import { clientHasGone } from '../../lib/client-connection.js'
import { ApiError, asClause, type FieldError } from '../../lib/errors.js'
import { detectImageType, tooLarge, TYPE_SNIFF_BYTES } from './image-processing.js'
import { SORT_ORDER_RANGE } from './images.schemas.js'
import type { NewPhoto } from './images.service.js'

const UPLOAD_FIELDS = new Set(['file', 'property_id', 'sort_order'])
/**
 * What a form may add to its file: two short fields and the parts' headers. A request whose
 * Content-Length exceeds the photo limit by more than this is refused before it is read.
 */
const FORM_OVERHEAD_BYTES = 1024 * 1024
/** RFC 2046: a boundary is 1 to 70 characters. */
const BOUNDARY = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))\s*(?:;|$)/i

/**
 * Reads POST /property-images/upload's multipart form: one `file`, `property_id` and an
 * optional `sort_order` (default 0). Every problem with the fields is reported at once; a file
 * that is not a photo is refused on its first bytes, and one over `maxBytes` is a 413 as soon as
 * the limit is passed (the rest of the body is not waited for).
 */
export async function readUploadForm(request: FastifyRequest, maxBytes: number): Promise<NewPhoto> {
  if (!request.isMultipart()) {
    throw new ApiError('unsupported_media_type', 'Send the photo as multipart/form-data with the fields file, property_id and sort_order.')
  }
  if (!BOUNDARY.test(request.headers['content-type'] ?? '')) {
    throw new ApiError(
      'bad_request',
      'The Content-Type multipart/form-data needs a boundary of 1 to 70 characters (multipart/form-data; boundary=...), the line that separates the parts of the body.',
    )
  }
  if (Number(request.headers['content-length']) > maxBytes + FORM_OVERHEAD_BYTES) throw tooLarge(maxBytes)
  const fields = new Map<string, string>()
  const truncated = new Set<string>()
  let bytes: Buffer | undefined
  let fileAsText = false
  const errors: FieldError[] = []
  try {
    for await (const part of request.parts()) {
      if (typeof part.fieldname !== 'string' || part.fieldname === '') {
        errors.push({ loc: ['body'], msg: 'has a part without a name (Content-Disposition: form-data; name="…")' })
        if (part.type === 'file') part.file.resume()
      } else if (!UPLOAD_FIELDS.has(part.fieldname)) {
        errors.push({ loc: ['body', part.fieldname], msg: 'is not a field of this form' })
        if (part.type === 'file') part.file.resume()
      } else if (part.type === 'file') {
        if (part.fieldname !== 'file') throw ApiError.validation([{ loc: ['body', part.fieldname], msg: 'must be a form field, not a file' }])
        bytes = await readPhoto(part.file, maxBytes)
      } else if (part.fieldname === 'file') {
        // A photo sent as text (curl -F "file=<photo.jpg"), whatever its length: the field's limit
        // has cut it, and what it lacks is a filename.
        fileAsText = true
      } else if (part.valueTruncated) {
        // Cut at the form's field size: read as it is, "0000…5" would be stored as 0.
        errors.push({ loc: ['body', part.fieldname], msg: 'is too long for this field' })
        truncated.add(part.fieldname)
      } else if (fields.has(part.fieldname)) {
        // Either value could be the one meant: the photo is not stored on a guess.
        errors.push({ loc: ['body', part.fieldname], msg: 'is given more than once' })
      } else {
        fields.set(part.fieldname, String(part.value))
      }
    }
  } catch (error) {
    throw formError(error, request, maxBytes)
  }
  const propertyId = truncated.has('property_id')
    ? undefined
    : integerField(fields.get('property_id'), 'property_id', errors, { min: 1, max: SORT_ORDER_RANGE.max })
  const sortOrder = fields.has('sort_order') ? integerField(fields.get('sort_order'), 'sort_order', errors, SORT_ORDER_RANGE) : 0
  if (bytes === undefined) errors.push({ loc: ['body', 'file'], msg: fileAsText ? 'must be a file part (with a filename), not a text field' : 'is required' })
  else if (fileAsText) errors.push({ loc: ['body', 'file'], msg: 'is given more than once' })
  if (errors.length > 0) throw ApiError.validation(errors)
  return { propertyId: propertyId!, sortOrder: sortOrder!, bytes: bytes! }
}

/**
 * What a client is told when the form could not be read. @fastify/multipart's own errors carry
 * a code; busboy's complaints about the body itself (a boundary it cannot use, a part cut short)
 * are plain Errors without one, and a file part the body ends inside of ends its stream
 * prematurely: the client's to fix, a 400. When the client has gone, its stream error passes
 * through, as does anything else.
 */
function formError(error: unknown, request: FastifyRequest, maxBytes: number): unknown {
  if (error instanceof ApiError || !(error instanceof Error) || clientHasGone(request)) return error
  const code = (error as { code?: unknown }).code
  switch (code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return tooLarge(maxBytes)
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return ApiError.validation(
        [{ loc: ['body'], msg: 'has more parts than this form takes: one file, property_id and sort_order' }],
        'The form has more parts than it takes: one file, property_id and sort_order.',
      )
    case 'FST_PROTO_VIOLATION':
      return ApiError.validation(
        [{ loc: ['body'], msg: 'names a field after a property every object has, such as __proto__ or constructor' }],
        'The form names a field __proto__, constructor or another name every object has, which this form does not have.',
      )
    case 'FST_INVALID_JSON_FIELD_ERROR':
      return ApiError.validation([{ loc: ['body'], msg: 'has a field labelled application/json that is not valid JSON' }])
    case 'ERR_STREAM_PREMATURE_CLOSE':
      return new ApiError('bad_request', 'The multipart/form-data body ends inside a part, before its closing boundary.')
  }
  if (code === undefined && Object.getPrototypeOf(error) === Error.prototype) {
    return new ApiError('bad_request', `The multipart/form-data body is malformed: ${asClause(error.message)}.`)
  }
  return error
}

/**
 * Reads the uploaded file into memory, at most `maxBytes`: busboy stops filling the stream
 * there and marks it truncated, which is a 413 at once. The type is checked on the first
 * bytes, so a file that is not a photo is refused (415) before the rest of it is read.
 */
async function readPhoto(file: MultipartFile['file'], maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  let sniffed = false
  try {
    for await (const chunk of file as AsyncIterable<Buffer>) {
      if (file.truncated) throw tooLarge(maxBytes)
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
  if (file.truncated) throw tooLarge(maxBytes)
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
