import createClient, { type Client, type ClientOptions } from 'openapi-fetch'
import type { paths } from './schema.js'

export interface MlsClientOptions {
  /** Where the service answers, for example `https://mls.example.com`. */
  baseUrl: string
  /** The agency's API key (`mls_live_…`), sent as `X-API-Key` on every request; the public routes work without it. */
  apiKey?: string
  /** A fetch to call instead of the global one (a proxy, retries, a test double). */
  fetch?: ClientOptions['fetch']
}

/** An openapi-fetch client over the service's paths: `client.GET('/mls/properties', …)` and so on. */
export type MlsClient = Client<paths>

/** Creates a client for one agency (with `apiKey`) or for the public routes (without). */
export function createMlsClient({ baseUrl, apiKey, fetch }: MlsClientOptions): MlsClient {
  return createClient<paths>({
    baseUrl,
    ...(fetch ? { fetch } : {}),
    ...(apiKey ? { headers: { 'X-API-Key': apiKey } } : {}),
  })
}
