import { Type, type Static } from 'typebox'
import { Id, Nullable, PageQuery, Timestamp } from '../../lib/schemas.js'
import { SUBSCRIBABLE_EVENTS } from '../events/event-types.js'

export { SUBSCRIBABLE_EVENTS } from '../events/event-types.js'

export const WebhookCreate = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'Where deliveries are POSTed: `https` (plain `http` only with ALLOW_PRIVATE_NETWORK), no credentials, a public host.',
    }),
    events: Type.Array(Type.Union(SUBSCRIBABLE_EVENTS.map((name) => Type.Literal(name))), {
      minItems: 1,
      maxItems: SUBSCRIBABLE_EVENTS.length * 4,
      description: 'The event types to receive; at least one. Repeats are ignored.',
    }),
    description: Type.Optional(Nullable(Type.String({ maxLength: 500, description: 'A note for the agency’s own use.' }))),
  },
  { additionalProperties: false, examples: [{ url: 'https://crm.example.com/hooks/mls', events: ['mls.new_listing'], description: 'CRM import' }] },
)
export type WebhookCreate = Static<typeof WebhookCreate>

/** D8's subscription, plus why the service switched it off, when it did. */
export const WebhookSubscription = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Nullable(Type.String()),
  is_active: Type.Boolean({ description: 'False once the service disabled it (see `disabled_reason`).' }),
  created_at: Timestamp,
  disabled_reason: Nullable(Type.String({ description: 'Why the service disabled it: the receiver answered 410 Gone, or no delivery succeeded for 5 days.' })),
  disabled_at: Nullable(Timestamp),
})
export type WebhookSubscription = Static<typeof WebhookSubscription>

/** What POST /webhooks answers: the subscription and, this once only, its signing secret. */
export const CreatedWebhookSubscription = Type.Object({
  ...WebhookSubscription.properties,
  secret: Type.String({ description: 'The Standard Webhooks signing secret, `whsec_` + base64. Shown only in this response: store it now.' }),
})
export type CreatedWebhookSubscription = Static<typeof CreatedWebhookSubscription>

export const DeliveryLogEntry = Type.Object({
  id: Type.Integer(),
  event_id: Type.Integer({ description: 'The event; also the `webhook-id` header of every attempt, as `msg_<event_id>`.' }),
  event_type: Type.String(),
  trigger: Type.Union([Type.Literal('event'), Type.Literal('test')]),
  attempt: Type.Integer({ description: '1 for the first attempt of a delivery, 2 for the first retry, …' }),
  status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('pending')], {
    description:
      '`succeeded`: a 2xx answer. `pending`: this attempt failed and another is due at `next_attempt_at`. `failed`: this attempt failed and the delivery was given up.',
  }),
  response_status_code: Nullable(Type.Integer()),
  response_body: Nullable(Type.String({ description: 'The first 4 KiB of the answer.' })),
  error: Nullable(
    Type.String({
      description: 'Why the attempt failed, starting with its kind: `http_status`, `timeout`, `connection`, `dns`, `blocked_address`, `invalid_url`.',
    }),
  ),
  duration_ms: Type.Integer(),
  created_at: Timestamp,
  next_attempt_at: Nullable(Timestamp),
})
export type DeliveryLogEntry = Static<typeof DeliveryLogEntry>

export const DeliveryLogPage = Type.Object({
  items: Type.Array(DeliveryLogEntry),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
})

export const WebhookIdParams = Type.Object({ id: Id })
export const DeliveryLogQuery = Type.Object(PageQuery)
