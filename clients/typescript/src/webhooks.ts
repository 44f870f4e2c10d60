import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import type { webhooks } from './schema.js'

export { WebhookVerificationError }

/** The envelope every delivery has (Standard Webhooks), whatever the event. */
export interface WebhookMessage {
  type: string
  /** When the event happened, RFC 3339. */
  timestamp: string
  data: Record<string, unknown>
}

/** The JSON body that the document's `webhooks` section gives one event. */
type DocumentedBody<Name extends keyof webhooks> = webhooks[Name] extends { post?: { requestBody?: { content: { 'application/json': infer Body } } } }
  ? Body
  : never
type DocumentedEvent = { [Name in keyof webhooks]: DocumentedBody<Name> }[keyof webhooks]

/**
 * A verified delivery: the union of the events the OpenAPI document describes, told apart by
 * `type`; the bare envelope while the document has no `webhooks` section (its generated type is
 * then `Record<string, never>`, with no event names).
 */
export type WebhookEvent = string extends keyof webhooks ? WebhookMessage : DocumentedEvent

/** Request headers as Node's `IncomingMessage` or the Fetch API's `Headers` hold them. */
export type WebhookHeaders = Headers | { [name: string]: string | string[] | undefined }

/**
 * Checks that a delivery comes from the service: its signature must match the subscription's
 * `secret` (`whsec_…`, given once when the subscription was created) and its timestamp be within
 * five minutes. Pass the body exactly as received, before any JSON parsing. Answers the parsed
 * event; throws WebhookVerificationError for a forged, altered or replayed delivery, and a
 * TypeError for a `secret` that is not such a secret (empty, cut short, another value): a
 * mistake of the receiver's configuration rather than of the delivery.
 */
export function verifyWebhook(secret: string, rawBody: string | Uint8Array, headers: WebhookHeaders): WebhookEvent {
  if (!SECRET.test(secret)) {
    throw new TypeError(`verifyWebhook needs the subscription's secret, "whsec_" then base64, as given when it was created; got ${describe(secret)}.`)
  }
  const payload = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody)
  // The signature covers the body, so once it matches, the body is the service's own message.
  return new Webhook(secret).verify(payload, signatureHeaders(headers)) as WebhookEvent
}

/**
 * The three Standard Webhooks headers; a missing one is left empty and fails verification.
 * Fetch API headers are told by their `get`, not by the global class: another implementation's
 * (the undici package's, node-fetch's) is not an instance of it.
 */
function signatureHeaders(headers: WebhookHeaders): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const read = (name: string): string => {
    if (isFetchHeaders(headers)) return headers.get(name) ?? ''
    const key = Object.keys(headers).find((candidate) => candidate.toLowerCase() === name)
    const value = key === undefined ? undefined : headers[key]
    return Array.isArray(value) ? value.join(' ') : (value ?? '')
  }
  return { 'webhook-id': read('webhook-id'), 'webhook-timestamp': read('webhook-timestamp'), 'webhook-signature': read('webhook-signature') }
}

/** `whsec_` and the base64 of the key: what the service gives, and what standardwebhooks decodes. */
const SECRET = /^whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$/

/** The shape of a wrong secret, never the secret itself: it may be one of another service. */
function describe(secret: string): string {
  if (secret === '') return 'an empty string'
  return secret.startsWith('whsec_')
    ? `"whsec_" then ${secret.length - 6} characters that are not base64`
    : `${secret.length} characters not starting with "whsec_"`
}

const isFetchHeaders = (headers: WebhookHeaders): headers is Headers => typeof (headers as { get?: unknown }).get === 'function'
