/**
 * The one HTTP client for requests the service makes on a tenant's behalf (photos added by
 * URL, webhook deliveries). A tenant chooses the address, so every connection is checked
 * against server-side request forgery: the host is resolved, and a loopback, private,
 * link-local or otherwise non-public address is refused at connect time (so DNS rebinding
 * between a check and the connection does not help), on every redirect hop. Time and bytes are
 * capped. `allowPrivateNetwork` (ALLOW_PRIVATE_NETWORK) lifts the address rule for
 * development and tests.
 */
import { promises as dns, type LookupAddress, type LookupOptions } from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGunzip } from 'node:zlib'
import ipaddr from 'ipaddr.js'
import { Agent, request, type Dispatcher } from 'undici'
import { ApiError, asClause } from './errors.js'

export type OutboundFailureKind = 'invalid_url' | 'blocked_address' | 'dns' | 'connection' | 'timeout' | 'too_large' | 'too_many_redirects'

/** Why a request could not be made or finished, in words a tenant can act on. */
export class OutboundError extends Error {
  override name = 'OutboundError'
  constructor(
    readonly kind: OutboundFailureKind,
    message: string,
    /** The status the answer began with, when it broke off after it (its body not all read). */
    readonly status?: number,
    /** What of that answer's body arrived before it broke off (at most `maxBodyBytes`). */
    readonly receivedBody?: Buffer,
    /** That answer's headers, which arrived with its status (its `Retry-After`, say). */
    readonly headers?: Dispatcher.ResponseData['headers'],
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
  /** Ends the exchange early (a worker that stops), as the time limit would. */
  signal?: AbortSignal
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

/** A download read as it arrives (OutboundClient.stream): for files too large to hold. */
export interface OutboundStreamRequest {
  url: string
  headers?: Record<string, string>
  /** For the whole exchange, the body's last byte included. */
  timeoutMs: number
  /** The most body bytes: counted as sent, and again once decompressed. More is an OutboundError `too_large`. */
  maxBodyBytes: number
  maxRedirects: number
  /** Every hop `https`: a redirect to plain `http` fails (`invalid_url`) rather than downgrade the exchange. */
  httpsOnly?: boolean
  /** Ends the exchange early (a worker that stops), as the time limit would. */
  signal?: AbortSignal
}

export interface OutboundStream {
  status: number
  headers: Record<string, string | string[] | undefined>
  /** The body, gzip already decoded; read it to the end or stop early (the connection is then closed). */
  body: AsyncIterable<Buffer>
  /** The address that answered, after redirects. */
  url: string
}

/**
 * Public unicast addresses only, as ipaddr.js ranges them; anything it cannot parse is not
 * public. An IPv6 address that carries an IPv4 one reaches that IPv4 host (through the local
 * stack, a 6to4 relay, a NAT64 gateway or a Teredo relay), so the IPv4 address is judged
 * instead: `::7f00:1` is loopback, however ipaddr.js ranges the IPv6 form.
 */
export function isPublicAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.parse(address)
  } catch {
    return false
  }
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast'
  const carried = carriedIPv4(parsed as ipaddr.IPv6)
  if (carried) return carried.every((ipv4) => ipv4.range() === 'unicast')
  return parsed.range() === 'unicast'
}

const IPV4_MAPPED = ipaddr.IPv6.parseCIDR('::ffff:0:0/96')
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96')
const IPV4_TRANSLATED = ipaddr.IPv6.parseCIDR('::ffff:0:0:0/96')
const NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96')
const NAT64_LOCAL_USE = ipaddr.IPv6.parseCIDR('64:ff9b:1::/48')
const SIX_TO_FOUR = ipaddr.IPv6.parseCIDR('2002::/16')
const TEREDO = ipaddr.IPv6.parseCIDR('2001::/32')

/** The IPv4 addresses an IPv6 form carries (every one must be public), or none. */
function carriedIPv4(address: ipaddr.IPv6): ipaddr.IPv4[] | undefined {
  const bytes = address.toByteArray()
  const at = (...positions: number[]) => new ipaddr.IPv4(positions.map((position) => bytes[position]!))
  if ([IPV4_MAPPED, IPV4_COMPATIBLE, IPV4_TRANSLATED, NAT64].some((range) => address.match(range))) return [at(12, 13, 14, 15)]
  if (address.match(SIX_TO_FOUR)) return [at(2, 3, 4, 5)]
  // The server in bits 32..64, the client in the last 32 bits, inverted (RFC 4380).
  if (address.match(TEREDO)) return [at(4, 5, 6, 7), new ipaddr.IPv4([12, 13, 14, 15].map((position) => bytes[position]! ^ 0xff))]
  // Where the IPv4 address sits depends on the length of the prefix the operator took from
  // this range (RFC 6052 2.2: /48, /56, /64 or /96; byte 8 is always skipped), which cannot be
  // known here, so every place it could sit is judged.
  if (address.match(NAT64_LOCAL_USE)) return [at(6, 7, 9, 10), at(7, 9, 10, 11), at(9, 10, 11, 12), at(12, 13, 14, 15)]
  return undefined
}

const BLOCKED = 'EMLSBLOCKED'
const REDIRECTS = new Set([301, 302, 303, 307, 308])

export interface OutboundClientOptions {
  /** ALLOW_PRIVATE_NETWORK: any address may be reached (development and tests only). */
  allowPrivateNetwork: boolean
  /** Which resolved addresses may be connected to; public ones unless a test narrows it. */
  isAllowedAddress?: (address: string) => boolean
  /** Every address of a host name; the system resolver (`dns.lookup`) unless a test gives its own. */
  resolve?: (hostname: string, options: LookupOptions) => Promise<LookupAddress[]>
  /** How long checking a URL to store waits for its host's addresses (5 s unless a test shortens it). */
  checkResolveTimeoutMs?: number
}

const CHECK_RESOLVE_TIMEOUT_MS = 5_000

/** One per process: its connection pool is shared by every outbound request. */
export class OutboundClient {
  private readonly agent: Agent
  private readonly allowPrivateNetwork: boolean
  private readonly isAllowedAddress: (address: string) => boolean
  private readonly resolve: (hostname: string, options: LookupOptions) => Promise<LookupAddress[]>
  private readonly checkResolveTimeoutMs: number

  constructor(options: OutboundClientOptions) {
    this.allowPrivateNetwork = options.allowPrivateNetwork
    this.checkResolveTimeoutMs = options.checkResolveTimeoutMs ?? CHECK_RESOLVE_TIMEOUT_MS
    this.isAllowedAddress = options.isAllowedAddress ?? isPublicAddress
    this.resolve = options.resolve ?? ((hostname, lookupOptions) => dns.lookup(hostname, { ...lookupOptions, all: true }))
    // The lookup runs for every new connection, so the address checked is the one connected to.
    const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
      this.resolve(hostname, lookupOptions).then(
        (addresses) => {
          const allowed = addresses.filter((entry) => this.allowed(entry.address))
          if (allowed.length === 0) {
            return callback(Object.assign(new Error(`${hostname} resolves to a non-public address`), { code: BLOCKED }), '', 0)
          }
          if (lookupOptions.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed)
          callback(null, allowed[0]!.address, allowed[0]!.family)
        },
        (error: NodeJS.ErrnoException) => callback(error, '', 0),
      )
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
    // The agency waits for its answer: a host whose name servers do not answer is refused in
    // seconds, not when the system resolver gives up (the lookup keeps its thread of libuv's
    // pool until then: the answer is freed, not the thread).
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new OutboundError('dns', `The host ${host} could not be resolved within ${this.checkResolveTimeoutMs} ms.`)),
        this.checkResolveTimeoutMs,
      )
    })
    const addresses = await Promise.race([
      // Any failure of the lookup, one thrown at once too, is the host's.
      Promise.resolve()
        .then(() => this.resolve(host, {}))
        .catch(() => {
          throw new OutboundError('dns', `The host ${host} could not be resolved.`)
        }),
      timedOut,
    ]).finally(() => clearTimeout(timer))
    if (!addresses.every((entry) => this.allowed(entry.address))) {
      throw new OutboundError('blocked_address', `The host ${host} resolves to a private or otherwise non-public address.`)
    }
    return url
  }

  /** Makes one request (following up to `maxRedirects` hops, each re-checked). */
  async request(options: OutboundRequest): Promise<OutboundResponse> {
    const timeout = AbortSignal.timeout(options.timeoutMs)
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout
    const { response, url } = await this.follow(options.url, { method: options.method ?? 'GET', headers: options.headers, body: options.body }, options, signal)
    const { bytes, truncated } = await readCapped(response, options, url)
    return { status: response.statusCode, headers: response.headers, body: bytes, truncated, url: url.toString() }
  }

  /**
   * A GET whose body is read as it arrives, never held whole: the same guard, redirects
   * re-checked, one time limit for the whole exchange. The server may send it gzipped
   * (`accept-encoding: gzip` is asked for); it is decoded here, and the byte cap applies to
   * what was sent and to what it decodes to, so a small bomb cannot grow past it.
   */
  async stream(options: OutboundStreamRequest): Promise<OutboundStream> {
    const timeout = AbortSignal.timeout(options.timeoutMs)
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout
    const headers = { ...options.headers, 'accept-encoding': 'gzip' }
    const { response, url } = await this.follow(options.url, { method: 'GET', headers }, options, signal)
    const declared = Number(response.headers['content-length'])
    if (declared > options.maxBodyBytes) {
      response.body.on('error', () => undefined).destroy()
      throw new OutboundError('too_large', `The response is ${declared} bytes; at most ${options.maxBodyBytes} are accepted.`)
    }
    const gzipped = /\bgzip\b/i.test(String(response.headers['content-encoding'] ?? ''))
    return { status: response.statusCode, headers: response.headers, body: cappedBody(response, gzipped, options, url, signal), url: url.toString() }
  }

  /**
   * Sends a request and follows up to `maxRedirects` redirects, each hop's address checked
   * again (a 303 goes on as a GET without a body): the last answer, its body not read yet.
   */
  private async follow(
    target: string,
    init: { method: 'GET' | 'POST'; headers?: Record<string, string> | undefined; body?: string | Buffer | undefined },
    options: { timeoutMs: number; maxRedirects: number; httpsOnly?: boolean },
    signal: AbortSignal,
  ): Promise<{ response: Dispatcher.ResponseData; url: URL }> {
    let url = this.parseTarget(target)
    let { method, body } = init
    for (let hop = 0; ; hop++) {
      let response: Dispatcher.ResponseData
      try {
        response = await request(url, { method, headers: init.headers, body, signal, dispatcher: this.agent })
      } catch (error) {
        // A connection still being made when the time is up fails on its own a little later: it is the time limit's failure.
        throw signal.aborted
          ? new OutboundError('timeout', `No complete answer from ${bareHost(url)} within ${options.timeoutMs} ms.`)
          : describeFailure(error, url, options.timeoutMs)
      }
      const location = response.headers.location
      if (REDIRECTS.has(response.statusCode) && options.maxRedirects > 0 && typeof location === 'string') {
        // Not read: a redirect's body is no part of the answer, and a server could make it endless.
        response.body.on('error', () => undefined).destroy()
        if (hop >= options.maxRedirects) throw new OutboundError('too_many_redirects', `More than ${options.maxRedirects} redirects.`)
        url = this.parseTarget(location, url)
        if (options.httpsOnly && url.protocol !== 'https:') {
          throw new OutboundError('invalid_url', `A redirect led to ${url.protocol}//${bareHost(url)}, which is not https.`)
        }
        if (response.statusCode === 303) [method, body] = ['GET', undefined]
        continue
      }
      return { response, url }
    }
  }

  async close(): Promise<void> {
    await this.agent.close()
  }

  /** The URL to request: `raw` as given, or a redirect's Location read against the URL that answered it (`base`). */
  private parseTarget(raw: string, base?: URL): URL {
    let url: URL
    try {
      url = new URL(raw, base)
    } catch {
      throw new OutboundError('invalid_url', base ? `A redirect led to "${raw}", which is not a valid URL.` : 'The URL is not a valid absolute URL.')
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
    throw describeFailure(error, url, options.timeoutMs, { status: response.statusCode, headers: response.headers, receivedBody: Buffer.concat(chunks) })
  }
  if (overflow && options.onLargeBody === 'fail') {
    throw new OutboundError('too_large', `The response is larger than ${options.maxBodyBytes} bytes.`)
  }
  return { bytes: Buffer.concat(chunks), truncated: overflow }
}

/** The body as sent, then decoded, each side counted against the cap; failures as OutboundErrors. */
async function* cappedBody(response: Dispatcher.ResponseData, gzipped: boolean, options: OutboundStreamRequest, url: URL, signal: AbortSignal) {
  const tooLarge = () => new OutboundError('too_large', `The response is larger than ${options.maxBodyBytes} bytes.`)
  const raw = response.body as AsyncIterable<Buffer> & { destroy(): void }
  let sent = 0
  async function* counted(): AsyncGenerator<Buffer> {
    for await (const chunk of raw) {
      sent += chunk.length
      if (sent > options.maxBodyBytes) throw tooLarge()
      yield chunk
    }
  }
  const source: AsyncIterable<Buffer> = gzipped ? gunzipped(counted()) : counted()
  let decoded = 0
  try {
    for await (const chunk of source) {
      decoded += chunk.length
      if (decoded > options.maxBodyBytes) throw tooLarge()
      yield chunk
    }
  } catch (error) {
    if (error instanceof OutboundError) throw error
    if (signal.aborted) throw new OutboundError('timeout', `No complete answer from ${bareHost(url)} within ${options.timeoutMs} ms.`)
    if ((error as NodeJS.ErrnoException).code?.startsWith('Z_')) throw new OutboundError('connection', `The gzip stream from ${bareHost(url)} is corrupt.`)
    throw describeFailure(error, url, options.timeoutMs)
  } finally {
    raw.destroy()
  }
}

/** Decodes gzip as it comes; an error of the source (the cap, the connection) ends the decoded side with that error. */
function gunzipped(source: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
  const gunzip = createGunzip()
  pipeline(Readable.from(source), gunzip).catch(() => undefined)
  return gunzip
}

/** Errors of a connection that was never made. */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT'])
/** Errors of a connection the other side closed. */
const CLOSED_BY_PEER = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET'])

/**
 * An exchange's failure in words that point where to look: a connection never made, one the
 * other side closed, an answer that is not HTTP, or, once the answer's `status` came, the rest of
 * it that did not (the status is kept: the other side did answer).
 */
function describeFailure(
  error: unknown,
  url: URL,
  timeoutMs: number,
  answer?: { status: number; headers: Dispatcher.ResponseData['headers']; receivedBody: Buffer },
): OutboundError {
  if (error instanceof OutboundError) return error
  const status = answer?.status
  const err = error as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException }
  const code = err.code ?? err.cause?.code
  const host = bareHost(url)
  const because = code ? ` (${code})` : ''
  if (code === BLOCKED) return new OutboundError('blocked_address', `The host ${host} resolves to a private or otherwise non-public address.`)
  if (err.name === 'TimeoutError' || err.name === 'AbortError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    const said =
      status === undefined
        ? `No complete answer from ${host} within ${timeoutMs} ms.`
        : `${host} answered ${status}, but the rest of its answer did not arrive within ${timeoutMs} ms.`
    return new OutboundError('timeout', said, status, answer?.receivedBody, answer?.headers)
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new OutboundError('dns', `The host ${host} could not be resolved.`)
  if (status !== undefined)
    return new OutboundError(
      'connection',
      `${host} answered ${status}, then the connection broke off before the end of the answer${because}.`,
      status,
      answer?.receivedBody,
      answer?.headers,
    )
  if (code !== undefined && CONNECT_FAILURES.has(code)) return new OutboundError('connection', `Could not connect to ${host}${because}.`)
  if (code !== undefined && CLOSED_BY_PEER.has(code)) return new OutboundError('connection', `${host} closed the connection without answering${because}.`)
  if (err.name === 'HTTPParserError') return new OutboundError('connection', `${host} answered with something that is not HTTP${because}.`)
  return new OutboundError('connection', `The connection to ${host} failed${because}.`)
}

/**
 * A tenant's address that cannot be used (refused by the guard, unreachable, or answering
 * with something unusable) as the 422 on its body field: `reason` is a clause such as "the
 * host did not answer in time", or the OutboundError that says it; `detail` leads with `summary`.
 */
export function invalidAddressError(field: string, summary: string, reason: string | OutboundError): ApiError {
  const why = reason instanceof OutboundError ? asClause(reason.message) : reason
  return ApiError.validation([{ loc: ['body', field], msg: why }], `${summary}: ${why}.`)
}
