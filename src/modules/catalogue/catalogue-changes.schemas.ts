import { Type, type Static } from 'typebox'
import { catalogueRemovalReasons } from '../../db/schema.js'
import { asStoredText, Id, Int32, StringEnum, Timestamp } from '../../lib/schemas.js'
import { CatalogueDetail } from './catalogue.schemas.js'

export const ChangeCursor = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9_-]+$',
  description: 'Opaque: a `cursor` or `next_cursor` this service gave.',
})

export const ListingRemoval = Type.Object(
  {
    id: Id,
    reason: asStoredText(
      StringEnum(
        'CatalogueRemovalReason',
        [...catalogueRemovalReasons],
        '`withdrawn` or `closed` by its agency, `deleted`, `suspended` with its agency, `rejected` by an operator.',
      ),
    ),
  },
  { title: 'ListingRemoval' },
)

export const CatalogueChange = Type.Object(
  {
    cursor: Type.String({ maxLength: 64, description: 'Where this change is in the feed: `after` this cursor reads the changes that follow it.' }),
    op: StringEnum('CatalogueChangeOp', ['upsert', 'remove'], '`upsert`: the listing is in the catalogue, as `property` shows it; `remove`: it left.'),
    id: Id,
    changed_at: { ...Timestamp, description: 'When the change committed; it never goes back along the feed.' },
    property: Type.Union([CatalogueDetail, ListingRemoval], {
      description: 'For `upsert`, the listing exactly as `GET /mls/properties/{id}` shows it; for `remove`, its id and why it left.',
    }),
  },
  { title: 'CatalogueChange' },
)

export const ChangesPage = Type.Object(
  {
    items: Type.Array(CatalogueChange, { maxItems: 1000 }),
    next_cursor: Type.String({ maxLength: 64, description: 'Read on from here; the same cursor again when there was nothing new.' }),
    has_more: Type.Boolean({ description: 'Whether more changes follow already; if not, poll `next_cursor` later.' }),
  },
  { title: 'CatalogueChangesPage' },
)
export type ChangesPage = Static<typeof ChangesPage>

export const ChangesQuery = Type.Object({
  after: Type.Optional(ChangeCursor),
  limit: Type.Optional(Int32({ minimum: 1, maximum: 1000, default: 100, description: 'Changes per page.' })),
})
export type ChangesQuery = Static<typeof ChangesQuery>

export const ChangesSnapshot = Type.Object(
  {
    cursor: Type.String({ maxLength: 64, description: 'The feed’s position now: changes committed from now on come after it.' }),
  },
  { title: 'CatalogueChangesSnapshot' },
)
