import { webhookEvents } from '../modules/webhooks/webhooks.schemas.js'
import type { NamedSchemas } from './components.js'

/** The Standard Webhooks headers every delivery carries; the signature covers id, timestamp and body. */
const signatureHeaders = [
  {
    in: 'header',
    name: 'webhook-id',
    required: true,
    description:
      '`msg_<event id>`: the same on every attempt of one event, so a receiver can ignore repeats; `msg_<event id>_unmatched` for the `mls.listing_removed` (reason `unmatched`) sent in place of an event whose listing stopped matching the subscription’s filter.',
    schema: { type: 'string', pattern: '^msg_[0-9]+(_unmatched)?$', maxLength: 40 },
  },
  {
    in: 'header',
    name: 'webhook-timestamp',
    required: true,
    description: 'When this attempt was signed, in Unix seconds; refuse a delivery far from your clock (Standard Webhooks allows 5 minutes).',
    schema: { type: 'string', pattern: '^[0-9]{1,12}$', maxLength: 12 },
  },
  {
    in: 'header',
    name: 'webhook-signature',
    required: true,
    description:
      '`v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the subscription’s secret (the base64 after `whsec_`). Any Standard Webhooks library verifies it.',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$', maxLength: 1000 },
  },
]

const receiverAnswers = {
  '2XX': { description: 'Delivered. Any 2xx answer counts; its body is kept (first 4 KiB) in the delivery log.' },
  '410': { description: 'Gone: the service switches the subscription off and stops delivering to it.' },
  default: {
    description:
      'Anything else, redirects included, fails the attempt: it is retried after the delays of WEBHOOK_RETRY_SCHEDULE, never sooner than a `Retry-After` header asks.',
  },
}

/** A test event is sent once, on request: its answer is logged and changes nothing else. */
const testAnswers = {
  '2XX': receiverAnswers['2XX'],
  default: { description: 'Anything else fails the test, which is not retried and does not count towards switching the subscription off (a 410 neither).' },
}

const summaries: Record<keyof typeof webhookEvents, { operationId: string; summary: string }> = {
  'mls.new_listing': { operationId: 'receiveNewListing', summary: 'A listing was published on the MLS' },
  'mls.listing_updated': { operationId: 'receiveListingUpdated', summary: 'A listing on the MLS changed' },
  'mls.listing_removed': { operationId: 'receiveListingRemoved', summary: 'A listing left the MLS, or stopped matching your filter' },
  'property.published': { operationId: 'receivePropertyPublished', summary: 'One of your listings was published' },
  'property.rejected': { operationId: 'receivePropertyRejected', summary: 'One of your listings was rejected' },
  'feed.run_finished': { operationId: 'receiveFeedRunFinished', summary: 'A run of one of your feeds ended' },
  'webhook.test': { operationId: 'receiveTestEvent', summary: 'A test event sent on request' },
}

/**
 * The OpenAPI 3.1 `webhooks` section: what the service POSTs to a subscription's URL, one
 * entry per event type, so receivers can generate types for the payloads too.
 */
export function webhooksSection(named: NamedSchemas): Record<string, { post: Record<string, unknown> }> {
  return Object.fromEntries(
    Object.entries(webhookEvents).map(([type, payload]) => {
      const { operationId, summary } = summaries[type as keyof typeof webhookEvents]
      const operation = {
        operationId,
        summary,
        description: `${String((payload as { description?: string }).description)} Sent as a signed POST to the URL of every matching subscription (Standard Webhooks).`,
        tags: ['Webhooks'],
        parameters: signatureHeaders,
        requestBody: { required: true, content: { 'application/json': { schema: named.refer(payload) } } },
        responses: type === 'webhook.test' ? testAnswers : receiverAnswers,
      }
      return [type, { post: operation }]
    }),
  )
}
