import { Type, type Static } from 'typebox'
import { Id, Int32, Nullable, Page, PageQuery, Timestamp, PathId } from '../../lib/schemas.js'
import { PROPERTY_NOT_FOUND } from '../../lib/errors.js'
import { revisionStatuses } from '../../db/schema.js'
import { ExternalId, ModerationResultSchema, RevisionStatusName, StatusId } from '../properties/properties.schemas.js'

const ListingVersion = Type.String({
  minLength: 1,
  maxLength: 64,
  description:
    'A digest of everything else this item shows but `external_id` (bookkeeping, no edit). Given back as `version` to approve or reject, it makes the decision apply to this version only: a listing changed since (edited, a new revision, new findings of the check) is a 409 instead of being decided unseen.',
})

/** A listing as an operator reviews it: the submission's facts and the check's findings. */
export const ListingUnderReview = Type.Object(
  {
    id: Id,
    tenant_id: Id,
    external_id: Nullable(ExternalId),
    status_id: StatusId,
    property_type_id: Int32({ minimum: 1, maximum: 32767 }),
    deal_type_id: Int32({ minimum: 1, maximum: 32767 }),
    price: Nullable(Type.Number({ minimum: 0 })),
    city_id: Nullable(Id),
    district_id: Nullable(Id),
    residential_complex_id: Nullable(Id),
    address: Nullable(Type.String({ maxLength: 1000 })),
    latitude: Nullable(Type.Number({ minimum: -90, maximum: 90 })),
    longitude: Nullable(Type.Number({ minimum: -180, maximum: 180 })),
    description: Nullable(Type.String({ maxLength: 10_000 })),
    attributes: Type.Record(Type.String(), Type.Union([Type.String({ maxLength: 1000 }), Type.Number(), Type.Boolean()]), { maxProperties: 100 }),
    moderation: Nullable(ModerationResultSchema),
    waiting_for_check: Type.Boolean({ description: 'True until the automatic check has run.' }),
    revision: Nullable(
      Type.Object(
        { status: RevisionStatusName, submitted_at: Timestamp },
        {
          title: 'ReviewedRevision',
          description:
            'For a published listing with a change to decide: the listing’s fields above are the revision’s, `moderation` the check’s findings on it; the catalogue shows the approved version meanwhile.',
        },
      ),
    ),
    updated_at: Timestamp,
    version: ListingVersion,
  },
  { title: 'ListingUnderReview' },
)
export type ListingUnderReview = Static<typeof ListingUnderReview>

export const ListingUnderReviewPage = Page(ListingUnderReview, 'ListingUnderReviewPage')

export const ReviewListQuery = Type.Object({
  status_id: Type.Optional({ ...StatusId, description: 'The listings’ status: 1 (waiting for review) by default, 2 with `revision`.' }),
  revision: Type.Optional(
    Type.Enum([...revisionStatuses], {
      type: 'string',
      description:
        'Only listings with a revision in this state: `revision=pending_review` lists the published listings whose changes wait for a decision. Only a published listing has revisions: with another `status_id` it is a 422.',
    }),
  ),
  ...PageQuery,
})

export const ListingIdParams = Type.Object({ id: PathId(PROPERTY_NOT_FOUND) })

export const ListingApproval = Type.Object({ version: Type.Optional(ListingVersion) }, { title: 'ListingApproval', additionalProperties: false })

export const ListingRejection = Type.Object(
  {
    version: Type.Optional(ListingVersion),
    reason: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2000,
        description: 'Shown to the agency among the reasons; not blank. Left out, the agency reads "Rejected by a moderator."',
      }),
    ),
  },
  { title: 'ListingRejection', additionalProperties: false },
)
