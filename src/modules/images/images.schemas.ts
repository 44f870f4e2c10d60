import { Type, type Static } from 'typebox'
import { GivenUrl, ShownGivenUrl, Id, Int32, Url, PathId } from '../../lib/schemas.js'
import { IMAGE_NOT_FOUND } from '../../lib/errors.js'

/** A sort_order is a 32-bit integer (the column's range). */
export const SORT_ORDER_RANGE = { min: -2_147_483_648, max: 2_147_483_647 }
const SortOrder = Int32({ minimum: SORT_ORDER_RANGE.min, maximum: SORT_ORDER_RANGE.max, description: 'Display position; lower first, then by id.' })

/** A photo as the API shows it: the interface's fields, plus its thumbnail, size and source. */
export const PropertyImage = Type.Object(
  {
    id: { ...Id, description: 'Image id.' },
    property_id: { ...Id, description: 'The property it belongs to.' },
    url: Url('URL of the stored (re-encoded) photo.'),
    sort_order: Int32({ description: 'Display position; 0 by default.' }),
    created_at: Type.String({ format: 'date-time', maxLength: 40, description: 'UTC, ending in Z.' }),
    thumbnail_url: Type.Optional(Url('URL of the small rendition (about 400 px wide).')),
    width: Type.Optional(
      Int32({ minimum: 1, description: 'Width of the stored photo, px: upright, the longer side at most IMAGE_MAX_EDGE (2560 by default), never enlarged.' }),
    ),
    height: Type.Optional(Int32({ minimum: 1, description: 'Height of the stored photo, px (see width).' })),
    source_url: Type.Optional(ShownGivenUrl('The address a photo added by URL was downloaded from.')),
  },
  {
    title: 'Image',
    examples: [
      {
        id: 7,
        property_id: 42,
        url: 'http://localhost:3000/media/photos/3Jx0cQ9w7Ykq2mN5vB8aLg.jpg',
        sort_order: 0,
        created_at: '2026-11-22T09:15:02.123Z',
        thumbnail_url: 'http://localhost:3000/media/photos/3Jx0cQ9w7Ykq2mN5vB8aLg-400.jpg',
        width: 2560,
        height: 1920,
      },
    ],
  },
)
export type PropertyImage = Static<typeof PropertyImage>

export const ImageListQuery = Type.Object({
  property_id: Type.Optional({ ...Id, description: 'Only this property’s photos.' }),
})

export const ImageIdParams = Type.Object({ image_id: PathId(IMAGE_NOT_FOUND) })

export const ImageByUrl = Type.Object(
  {
    property_id: Id,
    url: GivenUrl('A public http(s) address of a JPEG, PNG or WebP photo.'),
    sort_order: Type.Optional(SortOrder),
  },
  { title: 'ImageFromUrl', additionalProperties: false },
)
export type ImageByUrl = Static<typeof ImageByUrl>

export const ImageUpdate = Type.Object({ sort_order: SortOrder }, { title: 'ImageUpdate', additionalProperties: false })

/**
 * Documentation of the multipart body (parsed by the route itself, as a stream). The file is
 * binary content (`contentMediaType`), with `format: binary` too, which generators read as a Blob.
 */
export const ImageUploadForm = Type.Object(
  {
    file: Type.String({
      format: 'binary',
      contentMediaType: 'application/octet-stream',
      maxLength: 1024 * 1024 * 1024,
      description: 'The photo: JPEG, PNG or WebP, decided from its bytes; at most IMAGE_MAX_BYTES (15 MiB by default).',
    }),
    property_id: Id,
    sort_order: Type.Optional({ ...SortOrder, default: 0 }),
  },
  { title: 'ImageUpload' },
)
