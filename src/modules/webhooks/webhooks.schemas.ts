import { Type, type Static, type TSchema } from 'typebox'
import { CatalogueDetail, CatalogueItem } from '../catalogue/catalogue.schemas.js'
import { ListingFilter } from '../catalogue/listing-filter.js'
import { FeedRunSummary } from '../feeds/feeds.schemas.js'
import { ExternalId, ModerationReasonSchema } from '../properties/properties.schemas.js'
import { GivenUrl, ShownGivenUrl, Id, Int32, Int64, Nullable, PageQuery, Page, StringEnum, Timestamp, asStoredText, PathId } from '../../lib/schemas.js'
import { WEBHOOK_NOT_FOUND } from '../../lib/errors.js'

import { EVENT_TYPES, LISTING_REMOVED_REASONS, SUBSCRIBABLE_EVENTS } from '../events/event-types.js'
import { ERROR_MAX_LENGTH } from './webhook-sender.js'

export { EVENT_TYPES, SUBSCRIBABLE_EVENTS, type SubscribableEvent } from '../events/event-types.js'

export const WebhookEventType = Type.Union(
  SUBSCRIBABLE_EVENTS.map((name) => Type.Literal(name)),
  { title: 'WebhookEventType', description: 'An event a subscription can receive.' },
)
const DeliveredEventType = StringEnum('DeliveredEventType', [...EVENT_TYPES], 'The type of a delivered event: a subscribable one, or `webhook.test`.')

export const WebhookCreate = Type.Object(
  {
    url: GivenUrl('Where deliveries are POSTed: `https` (plain `http` only with ALLOW_PRIVATE_NETWORK), no credentials, a public host.'),
    events: Type.Array(WebhookEventType, {
      minItems: 1,
      maxItems: SUBSCRIBABLE_EVENTS.length * 4,
      description: 'The event types to receive; at least one. Repeats are ignored.',
    }),
    description: Type.Optional(Nullable(Type.String({ maxLength: 500, description: 'A note for the agency’s own use.' }))),
    filter: Type.Optional(Nullable(ListingFilter)),
  },
  {
    title: 'WebhookCreate',
    additionalProperties: false,
    examples: [
      { url: 'https://crm.example.com/hooks/mls', events: ['mls.new_listing'], description: 'CRM import' },
      {
        url: 'https://crm.example.com/hooks/flats',
        events: ['mls.new_listing', 'mls.listing_updated', 'mls.listing_removed'],
        filter: { city_id: 1, deal_type_id: 1, rooms: 2, max_price: 15_000_000 },
      },
    ],
  },
)
export type WebhookCreate = Static<typeof WebhookCreate>

/** PATCH /webhooks/{id}: the fields to change, at least one; `filter: null` removes the filter. */
export const WebhookUpdate = Type.Object(
  {
    url: Type.Optional(WebhookCreate.properties.url),
    events: Type.Optional(WebhookCreate.properties.events),
    description: WebhookCreate.properties.description,
    filter: WebhookCreate.properties.filter,
  },
  {
    title: 'WebhookUpdate',
    additionalProperties: false,
    minProperties: 1,
    examples: [{ filter: { city_id: 1, min_price: 5_000_000, max_price: 12_000_000 } }, { filter: null }],
  },
)
export type WebhookUpdate = Static<typeof WebhookUpdate>

const subscriptionFields = {
  id: Id,
  url: ShownGivenUrl('Where deliveries are POSTed.'),
  events: Type.Array(asStoredText(WebhookEventType), { maxItems: SUBSCRIBABLE_EVENTS.length }),
  description: Nullable(Type.String({ maxLength: 500 })),
  filter: Nullable(ListingFilter),
  is_active: Type.Boolean({ description: 'False once the service disabled it (see `disabled_reason`).' }),
  created_at: Timestamp,
  disabled_reason: Nullable(
    Type.String({ maxLength: 500, description: 'Why the service disabled it: the receiver answered 410 Gone, or no delivery succeeded for 5 days.' }),
  ),
  disabled_at: Nullable(Timestamp),
}

/** A webhook subscription, with why the service switched it off, when it did. */
export const WebhookSubscription = Type.Object(subscriptionFields, { title: 'Webhook' })
export type WebhookSubscription = Static<typeof WebhookSubscription>

/** What POST /webhooks answers: the subscription and, this once only, its signing secret. */
export const CreatedWebhookSubscription = Type.Object(
  {
    ...subscriptionFields,
    secret: Type.String({
      pattern: '^whsec_[A-Za-z0-9+/=]+$',
      maxLength: 100,
      description: 'The Standard Webhooks signing secret, `whsec_` + base64. Shown only in this response: store it now.',
    }),
  },
  { title: 'WebhookCreated' },
)
export type CreatedWebhookSubscription = Static<typeof CreatedWebhookSubscription>

export const DeliveryLogEntry = Type.Object(
  {
    // Both counted in PostgreSQL's bigint: every listing's events go to every agency subscribed.
    id: Int64({ minimum: 1 }),
    event_id: Int64({
      minimum: 1,
      description:
        'The event; also the `webhook-id` header of every attempt, as `msg_<event_id>`, or `msg_<event_id>_unmatched` for the `mls.listing_removed` sent in place of an event whose listing stopped matching the filter.',
    }),
    event_type: asStoredText(DeliveredEventType),
    trigger: Type.Enum(['event', 'test'], { type: 'string', description: '`event`: a delivery of an event; `test`: sent by the test route.' }),
    attempt: Int32({ minimum: 1, description: '1 for the first attempt of a delivery, 2 for the first retry, …' }),
    status: Type.Enum(['succeeded', 'failed'], {
      type: 'string',
      description:
        'This attempt’s own outcome. `succeeded`: a 2xx answer. `failed`: any other answer, a timeout or a connection error; `next_attempt_at` is when the delivery is tried again, null when it was given up (a test event is never tried again).',
    }),
    response_status_code: Nullable(
      Int32({ minimum: 100, maximum: 999, description: 'The receiver’s status code: any three digits HTTP lets it send, not only those HTTP defines.' }),
    ),
    response_body: Nullable(Type.String({ maxLength: 4096, description: 'The first 4 KiB of the answer.' })),
    error: Nullable(
      Type.String({
        maxLength: ERROR_MAX_LENGTH,
        description:
          'Why the attempt failed, starting with its kind: `http_status`, `timeout`, `connection`, `dns`, `blocked_address`, `invalid_url`, `signing`.',
      }),
    ),
    duration_ms: Int32({ minimum: 0 }),
    created_at: Timestamp,
    next_attempt_at: Nullable(Timestamp),
  },
  { title: 'WebhookLogEntry' },
)
export type DeliveryLogEntry = Static<typeof DeliveryLogEntry>

export const DeliveryLogPage = Page(DeliveryLogEntry, 'WebhookLogPage')

export const WebhookIdParams = Type.Object({ id: PathId(WEBHOOK_NOT_FOUND) })
export const DeliveryLogQuery = Type.Object(PageQuery)

/**
 * What a receiver gets: the body of every delivery is `{type, timestamp, data}`, signed as
 * Standard Webhooks describes (see the `webhooks` section of the OpenAPI document).
 */
const eventEnvelope = <D extends TSchema>(type: (typeof EVENT_TYPES)[number], title: string, description: string, data: D) =>
  Type.Object(
    {
      type: Type.Literal(type),
      timestamp: Type.String({ format: 'date-time', maxLength: 40, description: 'When the event happened (UTC, ending in Z); the same on every attempt.' }),
      data,
    },
    { title, description },
  )

const PropertyStatusId = (id: number) => Type.Literal(id)

export const NewListingEvent = eventEnvelope(
  'mls.new_listing',
  'NewListingEvent',
  'A listing was published on the MLS; sent to every agency subscribed to it. `data` is the listing as the catalogue shows it.',
  CatalogueItem,
)

export const ListingUpdatedEvent = eventEnvelope(
  'mls.listing_updated',
  'ListingUpdatedEvent',
  'The catalogue shows a listing anew: a change approved by the check, photos added, removed or reordered, or the listing back after its agency’s suspension; sent to every agency subscribed to it (with a filter: when the listing matches it after the change). `data` is the listing exactly as `GET /mls/properties/{id}` shows it now.',
  CatalogueDetail,
)

export const ListingRemovedEvent = eventEnvelope(
  'mls.listing_removed',
  'ListingRemovedEvent',
  'A listing left the catalogue, or (reason `unmatched`, to a filtered subscription only) stopped matching the subscription’s filter after a change; sent to every agency subscribed to it (with a filter: when the listing matched it).',
  Type.Object(
    {
      id: Id,
      reason: Type.Enum([...LISTING_REMOVED_REASONS], {
        type: 'string',
        description:
          '`withdrawn`, `closed`, `rejected`, `deleted`, `suspended`: why it left the catalogue. `unmatched`: it is still published, but no longer matches this subscription’s `filter`.',
      }),
    },
    { title: 'ListingRemovedData' },
  ),
)

/** The agency's own id of its listing, in the events only the agency receives. */
const PropertyExternalId = Nullable(ExternalId)

export const PropertyPublishedEvent = eventEnvelope(
  'property.published',
  'PropertyPublishedEvent',
  'One of the agency’s listings passed the check (or an operator approved it) and is published; for a revision (`revision: true`), the catalogue shows the listing’s new version from now on.',
  Type.Object(
    {
      property_id: Id,
      external_id: PropertyExternalId,
      status_id: PropertyStatusId(2),
      status_name: Type.String({ maxLength: 100 }),
      published_at: Timestamp,
      listing: CatalogueItem,
      revision: Type.Boolean({ description: 'Whether what was approved is a revision of a listing already published.' }),
    },
    { title: 'PropertyPublishedData' },
  ),
)

export const PropertyRejectedEvent = eventEnvelope(
  'property.rejected',
  'PropertyRejectedEvent',
  'One of the agency’s listings failed the check (or an operator rejected it); `reasons` says why. For a revision of a published listing (`revision: true`), the listing stays published as it was (status 2) and its revision is `rejected`.',
  Type.Object(
    {
      property_id: Id,
      external_id: PropertyExternalId,
      status_id: Type.Union([PropertyStatusId(3), PropertyStatusId(2)]),
      status_name: Type.String({ maxLength: 100 }),
      reasons: Type.Array(ModerationReasonSchema, { maxItems: 100 }),
      revision: Type.Boolean({ description: 'Whether what was rejected is a revision of a published listing.' }),
    },
    { title: 'PropertyRejectedData' },
  ),
)

export const TestEvent = eventEnvelope(
  'webhook.test',
  'TestEvent',
  'Sent by `POST /webhooks/{id}/test`, once, whatever the subscription’s events.',
  Type.Object({ subscription_id: Id, message: Type.String({ maxLength: 500 }) }, { title: 'TestEventData' }),
)

export const FeedRunFinishedEvent = eventEnvelope(
  'feed.run_finished',
  'FeedRunFinishedEvent',
  'A run of one of the agency’s feeds ended, whatever its status; `data` is the run as `GET /feeds/{id}/runs` lists it (its problems: `GET /feeds/{id}/runs/{run_id}`).',
  FeedRunSummary,
)

/** Every event a receiver may get, by type. */
export const webhookEvents = {
  'mls.new_listing': NewListingEvent,
  'mls.listing_updated': ListingUpdatedEvent,
  'mls.listing_removed': ListingRemovedEvent,
  'property.published': PropertyPublishedEvent,
  'property.rejected': PropertyRejectedEvent,
  'feed.run_finished': FeedRunFinishedEvent,
  'webhook.test': TestEvent,
} satisfies Record<(typeof EVENT_TYPES)[number], TSchema>
