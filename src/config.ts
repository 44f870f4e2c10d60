import { randomBytes } from 'node:crypto'
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import path from 'node:path'
import ipaddr from 'ipaddr.js'

/**
 * The service's whole configuration, read once from the environment (docs/operations.md).
 * Every variable is optional; a bad value stops the process with a message naming the
 * variable, what it got and what it expects.
 */
export interface Config {
  port: number
  host: string
  /**
   * The proxies in front whose X-Forwarded-* are trusted (addresses, CIDR ranges, or
   * `loopback`, `linklocal`, `uniquelocal`); empty trusts none. The client's address (for rate
   * limits and logs) is the nearest one in X-Forwarded-For that is not such a proxy.
   */
  trustedProxies: string[]
  /** How long a request may take to arrive, headers and body; past it, a 408 and the connection closed. */
  requestTimeoutMs: number
  /** `postgres://…`, or undefined for the embedded PGlite under `dataDir/pglite`. */
  databaseUrl: string | undefined
  databasePoolSize: number
  databasePipelinedConnections: number
  /**
   * How long the server lets a catalogue statement run; a statement of any kind unanswered for
   * 5 s longer has its connection taken for dead (db/client.ts).
   */
  databaseStatementTimeoutMs: number
  dataDir: string
  publicBaseUrl: string
  adminApiKey: string | undefined
  /** Key material for encrypting secrets at rest; see `loadSecretKey`. */
  secretKey: string
  moderationMode: 'auto' | 'manual'
  allowPrivateNetwork: boolean
  /** Delays in milliseconds between webhook delivery attempts after the first. */
  webhookRetryScheduleMs: number[]
  webhookTimeoutMs: number
  /** How often an idle worker looks for webhook work nobody announced (retries come due; PGlite has no notices). */
  webhookPollIntervalMs: number
  /** Webhook attempts one worker process has in flight at once. */
  webhookDeliveryConcurrency: number
  feeds: FeedConfig
  storageDriver: 'local' | 's3'
  /** Set when storageDriver is `s3` (all but the endpoint are then required). */
  s3: S3Config | undefined
  images: ImageLimits
  redisUrl: string | undefined
  /**
   * Put before every key the service writes to Redis, so that deployments (or test runs)
   * sharing one Redis count apart: their tenant ids and client addresses would otherwise meet.
   */
  redisKeyPrefix: string
  /** Bytes of catalogue answers each API process may keep (catalogue-cache.ts); 0 keeps none. */
  catalogueCacheBytes: number
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  rateLimits: RateLimitConfig
  retention: RetentionConfig
  /** Browser origins allowed to call the agency and operator routes (the public ones allow any). */
  corsOrigins: string[]
  metrics: MetricsConfig
}

/** Agencies' feeds (docs/feeds.md). */
export interface FeedConfig {
  /** FEED_MAX_BYTES: the most bytes of a feed file, counted as sent and again once decompressed. */
  maxBytes: number
  /** FEED_DOWNLOAD_TIMEOUT_MS: the time a feed's download may take, whole. */
  downloadTimeoutMs: number
  /** FEED_PHOTOS: whether runs download the offers' photos (off for benchmarks). */
  photos: boolean
  /** FEED_POLL_INTERVAL_MS: how often an idle worker looks for due feeds and runs to take over. */
  pollIntervalMs: number
}

/** Where Prometheus reads `/metrics` (docs/operations.md#metrics). */
export interface MetricsConfig {
  /** The port of the process's own metrics listener; 0 starts none. */
  port: number
  host: string
  /** When set, the public port answers `GET /metrics` too, to `Authorization: Bearer <token>`. */
  token: string | undefined
}

export interface S3Config {
  bucket: string
  /** Any S3-compatible service; unset = AWS itself. */
  endpoint: string | undefined
  region: string
  accessKeyId: string | undefined
  secretAccessKey: string | undefined
  /** Base of the photo URLs the API returns (a CDN or the bucket's public address). */
  publicUrl: string
}

export interface ImageLimits {
  maxBytes: number
  maxPixels: number
  /** Longer side of the stored photo, px; a smaller photo is stored at its own size. */
  maxEdge: number
  perProperty: number
  /** Photos re-encoded at once; the others wait, so catalogue reads keep a core. */
  processingConcurrency: number
  /** The nice value of the threads that re-encode photos (Linux): requests run first. */
  processingNiceness: number
  /**
   * Photos that may wait for their turn beyond those being re-encoded. Each holds at most
   * maxBytes from before its bytes are read; past the queue, uploads are a 503.
   */
  queueMax: number
}

export interface RateLimitConfig {
  enabled: boolean
  registrationPerHour: number
  registrationStatusPerMinute: number
  cataloguePerMinute: number
  apiKeyPerMinute: number
  /** Failed key checks and unknown routes allowed per client address before its 429s. */
  failuresPerMinute: number
}

/** What the worker's sweeps delete, and when (docs/operations.md#retention). */
export interface RetentionConfig {
  /** Events older than this many days are deleted, with their deliveries and attempts, once nothing is pending for them. */
  eventDays: number
  /** Removals older than this many days leave the change feed; a cursor older than the oldest kept answers 410. */
  changeDays: number
  /** Feed runs that finished this many days ago are deleted with their problems, but a feed's newest run. */
  feedRunDays: number
  /**
   * A stored file no photo row names is removed once it is this old. Younger ones may belong
   * to an upload whose row is about to be written.
   */
  orphanFileMinAgeMs: number
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

type Env = Record<string, string | undefined>

export interface LoadOptions {
  /**
   * The configuration of a command run beside a service (`npm run admin`): DATA_DIR must be a
   * service's, holding its database (unless DATABASE_URL names a server) and its secret key
   * (unless SECRET_KEY is set). A mistyped DATA_DIR would otherwise get a new, empty database,
   * and a key the service cannot read secrets sealed with.
   */
  existingDataDir?: boolean
}

export function loadConfig(env: Env = process.env, { existingDataDir = false }: LoadOptions = {}): Config {
  const problems: string[] = []
  const read = <T>(name: string, fallback: T, parse: (raw: string) => T): T => {
    const raw = env[name]
    if (raw === undefined || raw.trim() === '') return fallback
    try {
      return parse(raw.trim())
    } catch (error) {
      problems.push(`${shownSetting(name, raw)}: ${(error as Error).message}`)
      return fallback
    }
  }

  const port = read('PORT', 3000, integerIn(0, 65535))
  const dataDir = path.resolve(read('DATA_DIR', './data', (v) => v))
  const config: Config = {
    port,
    host: read('HOST', '127.0.0.1', hostName),
    trustedProxies: read('TRUST_PROXY', [], trustedProxies),
    requestTimeoutMs: read('REQUEST_TIMEOUT_MS', 30_000, integerIn(1000, 3_600_000)),
    databaseUrl: read('DATABASE_URL', undefined, postgresUrl),
    // Two connections per core, at least four: one Node process cannot keep more busy with
    // millisecond queries, and on a small machine shared with PostgreSQL more backends only
    // contend (docs/operations.md#database-connections).
    databasePoolSize: read('DATABASE_POOL_SIZE', Math.max(4, 2 * availableParallelism()), integerIn(1, 1000)),
    // The catalogue's statements, pipelined (db/pipelines.ts). One would put every search of the
    // process behind the slowest one: with two, the next go to the other.
    databasePipelinedConnections: read('DATABASE_PIPELINED_CONNECTIONS', 2, integerIn(1, 64)),
    databaseStatementTimeoutMs: read('DATABASE_STATEMENT_TIMEOUT_MS', 30_000, integerIn(1000, 3_600_000)),
    dataDir,
    publicBaseUrl: read('PUBLIC_BASE_URL', `http://localhost:${port}`, httpUrl),
    adminApiKey: read('ADMIN_API_KEY', undefined, minLength(16)),
    secretKey: read('SECRET_KEY', '', minLength(MIN_SECRET_KEY_LENGTH)),
    moderationMode: read('MODERATION_MODE', 'auto' as const, oneOf(['auto', 'manual'] as const)),
    allowPrivateNetwork: read('ALLOW_PRIVATE_NETWORK', false, boolean),
    webhookRetryScheduleMs: read('WEBHOOK_RETRY_SCHEDULE', parseDurationList('5s,5m,30m,2h,5h,10h,10h'), parseDurationList),
    webhookTimeoutMs: read('WEBHOOK_TIMEOUT_MS', 10_000, integerIn(100, 120_000)),
    webhookPollIntervalMs: read('WEBHOOK_POLL_INTERVAL_MS', 200, integerIn(10, 3_600_000)),
    webhookDeliveryConcurrency: read('WEBHOOK_DELIVERY_CONCURRENCY', 64, integerIn(1, 10_000)),
    feeds: {
      maxBytes: read('FEED_MAX_BYTES', 200 * 1024 * 1024, integerIn(1024, 64 * 1024 * 1024 * 1024)),
      downloadTimeoutMs: read('FEED_DOWNLOAD_TIMEOUT_MS', 600_000, integerIn(1000, 3_600_000)),
      photos: read('FEED_PHOTOS', true, boolean),
      pollIntervalMs: read('FEED_POLL_INTERVAL_MS', 5_000, integerIn(10, 3_600_000)),
    },
    storageDriver: read('STORAGE_DRIVER', 'local' as const, oneOf(['local', 's3'] as const)),
    s3: undefined,
    images: {
      maxBytes: read('IMAGE_MAX_BYTES', 15 * 1024 * 1024, integerIn(1024, 1024 * 1024 * 1024)),
      maxPixels: read('IMAGE_MAX_PIXELS', 50_000_000, integerIn(1, 1_000_000_000)),
      // What the listing portals serve full-screen. At least the thumbnail's width; at most
      // WebP's largest side.
      maxEdge: read('IMAGE_MAX_EDGE', 2560, integerIn(400, 16_383)),
      perProperty: read('IMAGE_MAX_PER_PROPERTY', 50, integerIn(1, 10_000)),
      processingConcurrency: read('IMAGE_PROCESSING_CONCURRENCY', Math.max(1, Math.floor(availableParallelism() / 2)), integerIn(1, 256)),
      processingNiceness: read('IMAGE_PROCESSING_NICENESS', 10, integerIn(0, 19)),
      queueMax: read('IMAGE_QUEUE_MAX', 8, integerIn(0, 10_000)),
    },
    redisUrl: read('REDIS_URL', undefined, redisUrl),
    redisKeyPrefix: read('REDIS_KEY_PREFIX', '', redisKeyPrefix),
    catalogueCacheBytes: read('CATALOGUE_CACHE_MB', 128, integerIn(0, 65_536)) * 1024 * 1024,
    logLevel: read('LOG_LEVEL', 'info' as const, oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const)),
    rateLimits: {
      enabled: read('RATE_LIMIT_ENABLED', true, boolean),
      registrationPerHour: read('RATE_LIMIT_REGISTRATION_PER_HOUR', 10, integerIn(1, 1_000_000)),
      registrationStatusPerMinute: read('RATE_LIMIT_REGISTRATION_STATUS_PER_MINUTE', 30, integerIn(1, 1_000_000)),
      cataloguePerMinute: read('RATE_LIMIT_CATALOGUE_PER_MINUTE', 600, integerIn(1, 1_000_000)),
      apiKeyPerMinute: read('RATE_LIMIT_API_KEY_PER_MINUTE', 1200, integerIn(1, 1_000_000)),
      failuresPerMinute: read('RATE_LIMIT_FAILURES_PER_MINUTE', 30, integerIn(1, 1_000_000)),
    },
    retention: {
      eventDays: read('EVENT_RETENTION_DAYS', 30, integerIn(1, 36_500)),
      changeDays: read('CHANGE_RETENTION_DAYS', 90, integerIn(1, 36_500)),
      feedRunDays: read('FEED_RUN_RETENTION_DAYS', 30, integerIn(1, 36_500)),
      orphanFileMinAgeMs: read('ORPHAN_FILE_MIN_AGE', 3_600_000, durationIn(1000, 30 * 86_400_000)),
    },
    corsOrigins: read('CORS_ORIGINS', [], originList),
    metrics: {
      // The port OpenTelemetry's Prometheus exporter uses: apart from the API's and the common exporters'.
      port: read('METRICS_PORT', 9464, integerIn(0, 65535)),
      host: read('METRICS_HOST', '127.0.0.1', hostName),
      token: read('METRICS_TOKEN', undefined, minLength(16)),
    },
  }

  if (config.metrics.port !== 0 && config.metrics.port === config.port) {
    problems.push(`METRICS_PORT=${config.metrics.port}: the API's own port (PORT); give the metrics another, or 0 for none`)
  }

  if (config.storageDriver === 's3') {
    const bucket = read('S3_BUCKET', '', (v) => v)
    const publicUrl = read('S3_PUBLIC_URL', '', httpUrl)
    if (bucket === '') problems.push('S3_BUCKET: required when STORAGE_DRIVER=s3')
    if (publicUrl === '') problems.push('S3_PUBLIC_URL: required when STORAGE_DRIVER=s3 (the base of the photo URLs the API returns)')
    config.s3 = {
      bucket,
      endpoint: read('S3_ENDPOINT', undefined, httpUrl),
      region: read('S3_REGION', 'us-east-1', (v) => v),
      accessKeyId: read('S3_ACCESS_KEY_ID', undefined, (v) => v),
      secretAccessKey: read('S3_SECRET_ACCESS_KEY', undefined, (v) => v),
      publicUrl,
    }
    // Both, or neither for the AWS SDK's default chain: one alone would be dropped without a word.
    const [keyId, secret] = [config.s3.accessKeyId, config.s3.secretAccessKey]
    if ((keyId === undefined) !== (secret === undefined)) {
      problems.push(
        `${keyId === undefined ? 'S3_ACCESS_KEY_ID' : 'S3_SECRET_ACCESS_KEY'}: required with ${keyId === undefined ? 'S3_SECRET_ACCESS_KEY' : 'S3_ACCESS_KEY_ID'} (or set neither, for the AWS SDK's default chain)`,
      )
    }
  }

  if (existingDataDir) {
    if (config.databaseUrl === undefined && !existsSync(path.join(embeddedDatabaseDir(dataDir), 'PG_VERSION'))) {
      problems.push(
        `DATA_DIR: ${dataDir} holds no database (the service makes it on its first start): set DATA_DIR to the service's folder, or DATABASE_URL to its server`,
      )
    } else if (config.secretKey === '' && !existsSync(secretKeyFile(dataDir))) {
      problems.push(`SECRET_KEY: unset, and DATA_DIR (${dataDir}) keeps none: set the service's SECRET_KEY, or DATA_DIR to the service's folder`)
    }
  }
  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  - ${problems.join('\n  - ')}`)
  }
  if (config.secretKey === '') config.secretKey = loadSecretKey(dataDir)
  return config
}

/** Where the embedded database lives in DATA_DIR. */
export function embeddedDatabaseDir(dataDir: string): string {
  return path.join(dataDir, 'pglite')
}

/** Where SECRET_KEY is kept in DATA_DIR when it is not set. */
function secretKeyFile(dataDir: string): string {
  return path.join(dataDir, 'secret-key')
}

/** The shortest SECRET_KEY taken, set or kept in DATA_DIR. */
const MIN_SECRET_KEY_LENGTH = 32

/**
 * SECRET_KEY, when unset, is generated once and kept in DATA_DIR so that encrypted values
 * survive restarts. Several API processes on different machines must share one SECRET_KEY
 * set explicitly: a generated file is per machine.
 *
 * The file is written whole under another name, then linked into place: a link fails where the
 * file exists, so of two processes starting at once (an API and a worker) one key wins, and no
 * process reads a file half written. A file too short to be a key (empty, after a crash of a
 * writer that wrote in place) stops the process rather than become the key.
 */
function loadSecretKey(dataDir: string): string {
  const file = secretKeyFile(dataDir)
  const kept = readSecretKeyFile(file)
  if (kept !== undefined) return kept
  mkdirSync(dataDir, { recursive: true })
  const generated = randomBytes(32).toString('base64url')
  const partial = `${file}.${process.pid}.partial`
  writeFileSync(partial, `${generated}\n`, { mode: 0o600 })
  try {
    linkSync(partial, file)
    return generated
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    return readSecretKeyFile(file)!
  } finally {
    rmSync(partial, { force: true })
  }
}

/** The key kept in `file`, undefined when there is no file. */
function readSecretKeyFile(file: string): string | undefined {
  let key: string
  try {
    key = readFileSync(file, 'utf8').trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  if (key.length < MIN_SECRET_KEY_LENGTH) {
    throw new ConfigError(
      `Invalid configuration:\n  - ${file} holds no usable key (under ${MIN_SECRET_KEY_LENGTH} characters): set SECRET_KEY, or remove the file to have a new key generated (secrets stored with the old one cannot be read with a new one)`,
    )
  }
  return key
}

function integerIn(min: number, max: number) {
  return (raw: string): number => {
    if (!/^-?\d+$/.test(raw)) throw new Error(`expected a whole number from ${min} to ${max}`)
    const value = Number(raw)
    if (value < min || value > max) throw new Error(`expected a whole number from ${min} to ${max}`)
    return value
  }
}

function oneOf<const T extends readonly string[]>(allowed: T) {
  return (raw: string): T[number] => {
    const value = raw.toLowerCase()
    if (!allowed.includes(value)) throw new Error(`expected one of ${allowed.join(', ')}`)
    return value
  }
}

function boolean(raw: string): boolean {
  const value = raw.toLowerCase()
  if (['true', '1', 'yes', 'on'].includes(value)) return true
  if (['false', '0', 'no', 'off'].includes(value)) return false
  throw new Error('expected true or false')
}

/** What `TRUST_PROXY=true` trusts: the private and local networks a proxy in front is reached from. */
export const PRIVATE_NETWORKS = ['loopback', 'linklocal', 'uniquelocal']

/**
 * TRUST_PROXY: `true` for proxies in private or local networks, a comma-separated list of
 * addresses and CIDR ranges for exactly those, `false` for none. Trusted by address, never by
 * a count of hops: a caller that reaches the service directly could otherwise write its own
 * X-Forwarded-For and choose the address its requests are counted by.
 */
function trustedProxies(raw: string): string[] {
  if (/^(true|yes|on|1)$/i.test(raw)) return PRIVATE_NETWORKS
  if (/^(false|no|off|0)$/i.test(raw)) return []
  const entries = raw.split(',').map((entry) => entry.trim())
  for (const entry of entries) {
    if (PRIVATE_NETWORKS.includes(entry) || isAddress(entry) || isCidr(entry)) continue
    throw new Error(`"${entry}" is not an address or a CIDR range; expected true, false or a list of the proxies' addresses`)
  }
  return entries
}

/** An IPv4 address in four decimal parts (ipaddr.js would also read `2` or `0x7f.1`), or an IPv6 one. */
const isAddress = (text: string) => ipaddr.IPv4.isValidFourPartDecimal(text) || ipaddr.IPv6.isValid(text)

function isCidr(text: string): boolean {
  const [address = '', bits, ...rest] = text.split('/')
  if (rest.length > 0 || bits === undefined || !/^\d{1,3}$/.test(bits) || !isAddress(address)) return false
  return Number(bits) <= (ipaddr.IPv4.isValidFourPartDecimal(address) ? 32 : 128)
}

/** Variables whose value is a secret: a configuration error names them without it. */
const SECRET_VARIABLES = new Set(['SECRET_KEY', 'ADMIN_API_KEY', 'METRICS_TOKEN', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'])
/** Variables whose value is an address that may carry a password. */
const ADDRESS_VARIABLES = new Set(['DATABASE_URL', 'REDIS_URL'])

/**
 * A variable as a configuration error shows it: `NAME="value"`, but never a secret (the message
 * goes to the process's output, and from there to whatever collects its logs), nor the password
 * of an address, nor an address that cannot be read to hide it.
 */
function shownSetting(name: string, raw: string): string {
  if (SECRET_VARIABLES.has(name)) return `${name} (its value not shown)`
  if (!ADDRESS_VARIABLES.has(name)) return `${name}=${JSON.stringify(raw)}`
  try {
    const url = new URL(raw.trim())
    if (url.password !== '') url.password = '***'
    // libpq and node-postgres also take it in the query (`?password=…`, `sslpassword`).
    for (const key of [...url.searchParams.keys()]) if (/password/i.test(key)) url.searchParams.set(key, '***')
    return `${name}=${JSON.stringify(url.href)}`
  } catch {
    return `${name} (its value not shown)`
  }
}

function minLength(length: number) {
  return (raw: string): string => {
    if (raw.length < length) throw new Error(`expected at least ${length} characters`)
    return raw
  }
}

function parsedUrl(raw: string, protocols: string[], expected: string): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new Error(`expected ${expected}`)
  }
  if (!protocols.includes(url.protocol)) throw new Error(`expected ${expected}`)
  return url
}

function postgresUrl(raw: string): string {
  parsedUrl(raw, ['postgres:', 'postgresql:'], 'a postgres:// URL')
  return raw
}

function redisUrl(raw: string): string {
  parsedUrl(raw, ['redis:', 'rediss:'], 'a redis:// URL')
  return raw
}

function redisKeyPrefix(raw: string): string {
  if (!/^[\w.:-]{1,64}$/.test(raw)) throw new Error('expected up to 64 letters, digits and . _ : -')
  return raw
}

/** `https://portal.example,http://localhost:5173`: origins exactly as a browser sends them. */
function originList(raw: string): string[] {
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((origin) => {
      const url = parsedUrl(origin, ['http:', 'https:'], `origins such as https://portal.example, separated by commas; got "${origin}"`)
      if (url.origin !== origin) throw new Error(`"${origin}" is not an origin: write the scheme, host and port only, as ${url.origin}`)
      return origin
    })
}

/**
 * A base URL the service puts paths after: no query or fragment, which the paths would follow.
 * Kept as URL parsers read it (`HTTPS://MLS.example` → `https://mls.example`, `https:/mls.example`
 * → `https://mls.example`), which is what every URL the service gives starts with.
 */
function httpUrl(raw: string): string {
  const url = parsedUrl(raw, ['http:', 'https:'], 'an http(s):// URL')
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(raw)) throw new Error('expected an http(s):// URL without a query or a fragment')
  return url.href.replace(/\/+$/, '')
}

/** A name of a host (RFC 1123 labels) or an IP address, to bind or to reach. */
function hostName(raw: string): string {
  const label = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?'
  if (ipaddr.isValid(raw) || (raw.length <= 253 && new RegExp(`^${label}(\\.${label})*\\.?$`, 'i').test(raw))) return raw
  throw new Error('expected an IP address or a host name')
}

const durationUnitsMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** One duration (`90s`, `1h`) in milliseconds, from `min` to `max`. */
function durationIn(min: number, max: number) {
  return (raw: string): number => {
    const value = parseDuration(raw)
    if (value === undefined || value < min || value > max) {
      throw new Error(`expected one duration from ${min / 1000}s to ${max / 86_400_000}d, such as 30s, 15m or 1h`)
    }
    return value
  }
}

function parseDuration(raw: string): number | undefined {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(raw.trim())
  return match ? Number(match[1]) * durationUnitsMs[match[2]!]! : undefined
}

/**
 * Parses a retry schedule, `5s,5m,30m,2h`, into milliseconds. Its bounds keep every retry
 * a date PostgreSQL and a timer can hold, and a delivery's attempts a list one can read.
 */
export function parseDurationList(raw: string): number[] {
  const parts = raw.split(',')
  if (parts.length > MAX_RETRIES) throw new Error(`${parts.length} delays; at most ${MAX_RETRIES} retries are taken`)
  return parts.map((part) => {
    const value = parseDuration(part)
    if (value === undefined) throw new Error(`"${part.trim()}" is not a duration; expected a list like 5s,5m,30m,2h`)
    if (value > MAX_RETRY_DELAY_MS) throw new Error(`"${part.trim()}" is longer than 30 days, the longest delay taken`)
    return value
  })
}
const MAX_RETRIES = 50
const MAX_RETRY_DELAY_MS = 30 * 86_400_000
