/**
 * One delivery attempt, the way Standard Webhooks describes it: the body
 * `{type, timestamp, data}` (the same bytes on every attempt), and the headers `webhook-id`
 * (the same on every attempt), `webhook-timestamp` (this attempt's) and `webhook-signature`
 * over all three, signed by the `standardwebhooks` package with the subscription's secret.
 * Sent through the guarded outbound client: no redirects, a time limit, 4 KiB of the answer kept.
 */
import { StringDecoder } from 'node:string_decoder'
import { LRUCache } from 'lru-cache'
import { Webhook } from 'standardwebhooks'
import { OutboundError, type OutboundClient } from '../../lib/outbound-http.js'
import type { SecretBox } from '../../lib/secrets.js'

/** The longest `error` an attempt's log entry shows. */
export const ERROR_MAX_LENGTH = 2000

/** The most of a receiver's answer kept in the log. */
export const RESPONSE_BODY_LIMIT = 4096

export interface WebhookMessage {
  /** `webhook-id`: stable across the retries of one event, so receivers can deduplicate. */
  id: string
  /** The exact body bytes, built once from the event. */
  body: string
}

export interface AttemptOutcome {
  succeeded: boolean
  statusCode: number | null
  responseBody: string | null
  /** `<kind>: <sentence>`; null on success. */
  error: string | null
  durationMs: number
  /** What a `Retry-After` answer asked for, in milliseconds. */
  retryAfterMs: number | undefined
  /** 410 Gone: the receiver says the subscription should end. */
  gone: boolean
}

/**
 * `msg_<event id>`: one message per event, whichever subscriptions receive it; for a variant
 * sent in its place (`unmatched`), `msg_<event id>_<variant>`, as its body differs.
 */
export function messageId(eventId: number, variant: string | null = null): string {
  return variant === null ? `msg_${eventId}` : `msg_${eventId}_${variant}`
}

/** The body of an event's deliveries; `timestamp` is when the event happened, not the attempt. */
export function messageBody(event: { type: string; createdAt: Date; data: unknown }): string {
  return JSON.stringify({ type: event.type, timestamp: event.createdAt.toISOString(), data: event.data })
}

/** Subscriptions whose opened secret a sender keeps. */
const SIGNERS_KEPT = 1024

export class WebhookSender {
  /** A signer for each subscription met, by its sealed secret, so that a secret is opened once, not for every delivery. */
  private readonly signers = new LRUCache<string, Webhook>({ max: SIGNERS_KEPT })

  constructor(
    private readonly outbound: OutboundClient,
    private readonly secrets: SecretBox,
    private readonly timeoutMs: number,
  ) {}

  async send(target: { url: string; secretSealed: string }, message: WebhookMessage): Promise<AttemptOutcome> {
    const started = performance.now()
    const elapsed = () => Math.round(performance.now() - started)
    const sentAt = new Date()
    let signature: string
    try {
      signature = this.signer(target.secretSealed).sign(message.id, sentAt, message.body)
    } catch {
      // The secret was sealed with another SECRET_KEY: nothing a retry can mend, but logged for the tenant.
      return failure('signing: The subscription’s secret cannot be read with this server’s SECRET_KEY; create the subscription again.', elapsed())
    }
    try {
      const response = await this.outbound.request({
        url: target.url,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Open-MLS-Webhooks/1',
          'webhook-id': message.id,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body: message.body,
        timeoutMs: this.timeoutMs,
        maxBodyBytes: RESPONSE_BODY_LIMIT,
        onLargeBody: 'truncate',
        // A redirect is an answer like any other non-2xx: it fails the attempt.
        maxRedirects: 0,
      })
      const succeeded = response.status >= 200 && response.status < 300
      return {
        succeeded,
        statusCode: response.status,
        responseBody: bodyText(response.body),
        error: succeeded ? null : `http_status: The receiver answered ${response.status}; only a 2xx answer counts as delivered.`,
        durationMs: elapsed(),
        retryAfterMs: succeeded ? undefined : parseRetryAfter(response.headers['retry-after'], sentAt),
        gone: response.status === 410,
      }
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error
      // What arrived of an answer that broke off is kept: often the receiver's own word on its error.
      const received = error.receivedBody === undefined ? null : bodyText(error.receivedBody)
      // A receiver that answered 2xx took the message, whatever became of the rest of its answer.
      if (error.status !== undefined && error.status >= 200 && error.status < 300) {
        return { succeeded: true, statusCode: error.status, responseBody: received, error: null, durationMs: elapsed(), retryAfterMs: undefined, gone: false }
      }
      return {
        ...failure(`${error.kind}: ${error.message}`, elapsed()),
        statusCode: error.status ?? null,
        responseBody: received,
        // The status decides, and its headers came with it: a Retry-After is honoured as from any answer.
        retryAfterMs: parseRetryAfter(error.headers?.['retry-after'], sentAt),
        gone: error.status === 410,
      }
    }
  }

  private signer(secretSealed: string): Webhook {
    let signer = this.signers.get(secretSealed)
    if (!signer) {
      signer = new Webhook(this.secrets.open(secretSealed))
      this.signers.set(secretSealed, signer)
    }
    return signer
  }
}

function failure(error: string, durationMs: number): AttemptOutcome {
  // An error may repeat the URL (its host), which may be up to 2,048 characters long.
  const shown = error.length > ERROR_MAX_LENGTH ? `${error.slice(0, ERROR_MAX_LENGTH - 1)}…` : error
  return { succeeded: false, statusCode: null, responseBody: null, error: shown, durationMs, retryAfterMs: undefined, gone: false }
}

/**
 * Text for the log, null for no byte at all: invalid UTF-8 replaced, a character cut by the
 * 4 KiB limit (or by an answer that broke off) left out rather than shown as U+FFFD, and NUL
 * removed (PostgreSQL text cannot hold it).
 */
function bodyText(bytes: Buffer): string | null {
  if (bytes.length === 0) return null
  return new StringDecoder('utf8').write(bytes).replaceAll('\u0000', '')
}

const DAY = String.raw`(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)`
const MONTH = String.raw`(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)`
const TIME = String.raw`\d{2}:\d{2}:\d{2}`
/** HTTP-date's three forms (RFC 9110 §5.6.7): IMF-fixdate, then the obsolete RFC 850 and asctime ones. */
const HTTP_DATE = new RegExp(String.raw`^${DAY}, \d{2} ${MONTH} \d{4} ${TIME} GMT$`)
const RFC850_DATE = new RegExp(String.raw`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \d{2}-${MONTH}-\d{2} ${TIME} GMT$`)
const ASCTIME_DATE = new RegExp(String.raw`^${DAY} ${MONTH} [ \d]\d ${TIME} \d{4}$`)

/**
 * `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 §10.2.3); anything else is ignored
 * (`Date.parse` alone would read the 7200 of `max-age=7200` as a year).
 */
export function parseRetryAfter(header: string | string[] | undefined, now: Date): number | undefined {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000
  // asctime names no zone: it is GMT, as every HTTP-date.
  const date =
    HTTP_DATE.test(trimmed) || RFC850_DATE.test(trimmed) ? Date.parse(trimmed) : ASCTIME_DATE.test(trimmed) ? Date.parse(`${trimmed} GMT`) : Number.NaN
  return Number.isNaN(date) ? undefined : Math.max(0, date - now.getTime())
}
