/**
 * The one HTTP client for requests the service makes on a tenant's behalf (photos added by
 * URL, webhook deliveries). A tenant chooses the address, so every connection is checked
 * against server-side request forgery: the host is resolved, and a loopback, private,
 * link-local or otherwise non-public address is refused at connect time (so DNS rebinding
 * between a check and the connection does not help), on every redirect hop. Time and bytes are
 * capped. `allowPrivateNetwork` (ALLOW_PRIVATE_NETWORK) lifts the address rule for
 * development and tests.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'
import { Agent, request, type Dispatcher } from 'undici'
import { ApiError } from './errors.js'

export type OutboundFailureKind = 'invalid_url' | 'blocked_address' | 'dns' | 'connection' | 'timeout' | 'too_large' | 'too_many_redirects'

/** Why a request could not be made or finished, in words a tenant can act on. */
export class OutboundError extends Error {
  override name = 'OutboundError'
  constructor(
    readonly kind: OutboundFailureKind,
    message: string,
  ) {
    super(message)
  }
}

export interface OutboundRequest {
  url: string
  method?: 'GET' | 'POST'
  headers?: Record<string, string>
  body?: string | Buffer
  /** For the whole exchange: every hop, headers and body. */
  timeoutMs: number
  /** The most body bytes read. */
  maxBodyBytes: number
  /** `fail`: a longer body is an error (downloads); `truncate`: keep the first bytes (logs). */
  onLargeBody: 'fail' | 'truncate'
  /** Redirects followed, each re-checked; 0 returns the 3xx response itself. */
  maxRedirects: number
}

export interface OutboundResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
  /** True when `onLargeBody: 'truncate'` cut the body. */
  truncated: boolean
  /** The address that answered, after redirects. */
  url: string
}

/** Public unicast addresses only (ipaddr.js ranges); IPv4-mapped IPv6 is judged as IPv4. */
export function isPublicAddress(address: string): boolean {
  let parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address()
  return parsed.range() === 'unicast'
}

const BLOCKED = 'EMLSBLOCKED'
const REDIRECTS = new Set([301, 302, 303, 307, 308])

export interface OutboundClientOptions {
  /** ALLOW_PRIVATE_NETWORK: any address may be reached (development and tests only). */
  allowPrivateNetwork: boolean
  /** Which resolved addresses may be connected to; public ones unless a test narrows it. */
  isAllowedAddress?: (address: string) => boolean
}

/** One per process: its connection pool is shared by every outbound request. */
export class OutboundClient {
  private readonly agent: Agent
  private readonly allowPrivateNetwork: boolean
  private readonly isAllowedAddress: (address: string) => boolean

  constructor(options: OutboundClientOptions) {
    this.allowPrivateNetwork = options.allowPrivateNetwork
    this.isAllowedAddress = options.isAllowedAddress ?? isPublicAddress
    // The lookup runs for every new connection, so the address checked is the one connected to.
    const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
      dnsLookup(hostname, { ...lookupOptions, all: true }, (error, addresses: LookupAddress[]) => {
        if (error) return callback(error, '', 0)
        const allowed = addresses.filter((entry) => this.allowed(entry.address))
        if (allowed.length === 0) {
          return callback(Object.assign(new Error(`${hostname} resolves to a non-public address`), { code: BLOCKED }), '', 0)
        }
        if (lookupOptions.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed)
        callback(null, allowed[0]!.address, allowed[0]!.family)
      })
    }
    // Idle sockets to tenants' hosts are not kept long.
    this.agent = new Agent({ connect: { lookup }, keepAliveTimeout: 4_000, connections: 64 })
  }

  private allowed(address: string): boolean {
    return this.allowPrivateNetwork || this.isAllowedAddress(address)
  }

  /**
   * Checks a URL a tenant gives before it is stored (webhook subscriptions): http(s), no
   * credentials, and a host that resolves only to allowed addresses. The same rule is applied
   * again at every connection.
   */
  async checkUrl(raw: string): Promise<URL> {
    const url = this.parseTarget(raw)
    const host = bareHost(url)
    if (this.allowPrivateNetwork || isIP(host)) return url
    const addresses = await new Promise<LookupAddress[]>((resolve, reject) =>
      dnsLookup(host, { all: true }, (error, found) => (error ? reject(error) : resolve(found))),
    ).catch(() => {
      throw new OutboundError('dns', `The host ${host} could not be resolved.`)
    })
    if (!addresses.every((entry) => this.allowed(entry.address))) {
      throw new OutboundError('blocked_address', `The host ${host} resolves to a private or otherwise non-public address.`)
    }
    return url
  }

  /** Makes one request (following up to `maxRedirects` hops, each re-checked). */
  async request(options: OutboundRequest): Promise<OutboundResponse> {
    const signal = AbortSignal.timeout(options.timeoutMs)
    let url = this.parseTarget(options.url)
    let method = options.method ?? 'GET'
    let body = options.body
    for (let hop = 0; ; hop++) {
      let response: Dispatcher.ResponseData
      try {
        response = await request(url, { method, headers: options.headers, body, signal, dispatcher: this.agent })
      } catch (error) {
        throw describeFailure(error, url, options.timeoutMs)
      }
      const location = response.headers.location
      if (REDIRECTS.has(response.statusCode) && options.maxRedirects > 0 && typeof location === 'string') {
        response.body.resume()
        if (hop >= options.maxRedirects) {
          throw new OutboundError('too_many_redirects', `More than ${options.maxRedirects} redirects.`)
        }
        url = this.parseTarget(new URL(location, url).toString())
        if (response.statusCode === 303) [method, body] = ['GET', undefined]
        continue
      }
      const { bytes, truncated } = await readCapped(response, options, url)
      return { status: response.statusCode, headers: response.headers, body: bytes, truncated, url: url.toString() }
    }
  }

  async close(): Promise<void> {
    await this.agent.close()
  }

  private parseTarget(raw: string): URL {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      throw new OutboundError('invalid_url', 'The URL is not a valid absolute URL.')
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundError('invalid_url', 'Only http and https URLs are allowed.')
    if (url.username !== '' || url.password !== '') throw new OutboundError('invalid_url', 'URLs with credentials are not allowed.')
    // A literal address is connected to without a lookup, so it is checked here.
    const host = bareHost(url)
    if (isIP(host) && !this.allowed(host)) throw new OutboundError('blocked_address', `The address ${host} is private or otherwise non-public.`)
    return url
  }
}

function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '')
}

async function readCapped(response: Dispatcher.ResponseData, options: OutboundRequest, url: URL) {
  const declared = Number(response.headers['content-length'])
  if (options.onLargeBody === 'fail' && declared > options.maxBodyBytes) {
    // Closing a body undici is still reading makes it emit an abort error nobody needs.
    response.body.on('error', () => undefined).destroy()
    throw new OutboundError('too_large', `The response is ${declared} bytes; at most ${options.maxBodyBytes} are accepted.`)
  }
  const chunks: Buffer[] = []
  let size = 0
  let overflow = false
  try {
    // Leaving the loop early closes the body, so the rest is never read.
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      const room = options.maxBodyBytes - size
      chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk)
      size += Math.min(chunk.length, room)
      if (chunk.length > room) {
        overflow = true
        break
      }
    }
  } catch (error) {
    throw describeFailure(error, url, options.timeoutMs)
  }
  if (overflow && options.onLargeBody === 'fail') {
    throw new OutboundError('too_large', `The response is larger than ${options.maxBodyBytes} bytes.`)
  }
  return { bytes: Buffer.concat(chunks), truncated: overflow }
}

function describeFailure(error: unknown, url: URL, timeoutMs: number): OutboundError {
  if (error instanceof OutboundError) return error
  const err = error as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException }
  const code = err.code ?? err.cause?.code
  const host = bareHost(url)
  if (code === BLOCKED) return new OutboundError('blocked_address', `The host ${host} resolves to a private or otherwise non-public address.`)
  if (err.name === 'TimeoutError' || err.name === 'AbortError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new OutboundError('timeout', `No complete answer from ${host} within ${timeoutMs} ms.`)
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new OutboundError('dns', `The host ${host} could not be resolved.`)
  return new OutboundError('connection', `Could not connect to ${host}${code ? ` (${code})` : ''}.`)
}

/**
 * A tenant's address that cannot be used (refused by the guard, unreachable, or answering
 * with something unusable) as the 422 on its body field: `reason` is a clause such as "the
 * host did not answer in time", or the OutboundError that says it; `detail` leads with `summary`.
 */
export function invalidAddressError(field: string, summary: string, reason: string | OutboundError): ApiError {
  const why = reason instanceof OutboundError ? lowerFirst(reason.message.replace(/\.$/, '')) : reason
  return ApiError.validation([{ loc: ['body', field], msg: why }], `${summary}: ${why}.`)
}

const lowerFirst = (text: string) => text.charAt(0).toLowerCase() + text.slice(1)
