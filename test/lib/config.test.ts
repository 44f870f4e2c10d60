import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config.js'
import { nodeArguments } from '../helpers/code-tree.js'

describe('configuration', () => {
  const made: string[] = []
  /** A new data directory, removed after the tests. */
  const dataDir = () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mls-config-'))
    made.push(dir)
    return dir
  }
  after(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true })
  })

  it('has its documented defaults', () => {
    const dir = dataDir()
    const config = loadConfig({ DATA_DIR: dir })
    assert.equal(config.port, 3000)
    assert.equal(config.host, '127.0.0.1')
    assert.equal(config.databaseUrl, undefined)
    assert.equal(config.publicBaseUrl, 'http://localhost:3000')
    assert.equal(config.adminApiKey, undefined)
    assert.equal(config.moderationMode, 'auto')
    assert.equal(config.allowPrivateNetwork, false)
    assert.deepEqual(config.webhookRetryScheduleMs, [5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6])
    assert.equal(config.webhookTimeoutMs, 10_000)
    assert.equal(config.storageDriver, 'local')
    assert.equal(config.logLevel, 'info')
    assert.equal(config.rateLimits.registrationPerHour, 10)
    assert.equal(config.rateLimits.registrationStatusPerMinute, 30)
    assert.equal(config.rateLimits.cataloguePerMinute, 600)
    assert.equal(config.rateLimits.apiKeyPerMinute, 1200)
    assert.equal(config.rateLimits.failuresPerMinute, 30)
    assert.deepEqual(config.corsOrigins, [])
    assert.deepEqual(config.metrics, { port: 9464, host: '127.0.0.1', token: undefined })
    assert.equal(config.databasePipelinedConnections, 2)
    assert.deepEqual(config.retention, { eventDays: 30, changeDays: 90, feedRunDays: 30, orphanFileMinAgeMs: 3_600_000 })
    assert.deepEqual(config.feeds, { maxBytes: 200 * 1024 * 1024, downloadTimeoutMs: 600_000, photos: true, pollIntervalMs: 5_000 })
    assert.equal(config.images.maxEdge, 2560)
    assert.deepEqual(config.trustedProxies, [])
  })

  it('reads TRUST_PROXY as the proxies to trust: true for private and local networks, or their addresses', () => {
    const dir = dataDir()
    for (const [value, trusted] of [
      ['true', ['loopback', 'linklocal', 'uniquelocal']],
      ['false', []],
      ['10.0.0.1, 10.0.0.0/8,fd00::/8', ['10.0.0.1', '10.0.0.0/8', 'fd00::/8']],
    ] as const) {
      assert.deepEqual(loadConfig({ DATA_DIR: dir, TRUST_PROXY: value }).trustedProxies, trusted, `TRUST_PROXY=${value}`)
    }
    assert.throws(() => loadConfig({ DATA_DIR: dir, TRUST_PROXY: '2' }), /TRUST_PROXY="2": "2" is not an address or a CIDR range/)
  })

  it('generates SECRET_KEY once into DATA_DIR, private, and reuses it', () => {
    const dir = dataDir()
    const first = loadConfig({ DATA_DIR: dir }).secretKey
    assert.ok(first.length >= 32)
    assert.equal(loadConfig({ DATA_DIR: dir }).secretKey, first)
    assert.equal(readFileSync(path.join(dir, 'secret-key'), 'utf8').trim(), first)
    assert.equal(statSync(path.join(dir, 'secret-key')).mode & 0o777, 0o600)
    assert.deepEqual(
      readdirSync(dir).filter((name) => name.startsWith('secret-key')),
      ['secret-key'],
      'no partial file is left',
    )
  })

  it('refuses a kept SECRET_KEY too short to be a key, naming its file, rather than use it', () => {
    for (const kept of ['', '\n', 'short\n']) {
      const dir = dataDir()
      writeFileSync(path.join(dir, 'secret-key'), kept)
      assert.throws(
        () => loadConfig({ DATA_DIR: dir }),
        (error: Error) => error instanceof ConfigError && error.message.includes(path.join(dir, 'secret-key')),
      )
      assert.equal(loadConfig({ DATA_DIR: dir, SECRET_KEY: 'an-explicit-secret-key-long-enough-01234' }).secretKey, 'an-explicit-secret-key-long-enough-01234')
    }
  })

  it('for a command beside a service, refuses a DATA_DIR no service has used rather than make a database or a key there', () => {
    const refused = (env: Record<string, string>, problem: RegExp) =>
      assert.throws(
        () => loadConfig(env, { existingDataDir: true }),
        (error: Error) => error instanceof ConfigError && problem.test(error.message),
      )
    const missing = path.join(dataDir(), 'mistyped')
    refused({ DATA_DIR: missing }, /DATA_DIR: .*mistyped holds no database .*set DATA_DIR to the service's folder, or DATABASE_URL/)
    refused({ DATA_DIR: missing, SECRET_KEY: 'an-explicit-secret-key-long-enough-01234' }, /DATA_DIR: .* holds no database/)
    refused({ DATA_DIR: missing, DATABASE_URL: 'postgres://127.0.0.1/mls' }, /SECRET_KEY: unset, and DATA_DIR \(.*mistyped\) keeps none/)
    assert.deepEqual(readdirSync(path.dirname(missing)), [], 'nothing is made')

    const served = dataDir()
    mkdirSync(path.join(served, 'pglite'))
    writeFileSync(path.join(served, 'pglite', 'PG_VERSION'), '17\n')
    refused({ DATA_DIR: served }, /SECRET_KEY: unset, and DATA_DIR/)
    const key = loadConfig({ DATA_DIR: served }).secretKey
    assert.equal(loadConfig({ DATA_DIR: served }, { existingDataDir: true }).secretKey, key)
    const withServer = { DATA_DIR: missing, DATABASE_URL: 'postgres://127.0.0.1/mls', SECRET_KEY: 'an-explicit-secret-key-long-enough-01234' }
    assert.equal(loadConfig(withServer, { existingDataDir: true }).databaseUrl, 'postgres://127.0.0.1/mls')
  })

  it('derives PUBLIC_BASE_URL from PORT and reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      DATA_DIR: dataDir(),
      DATABASE_URL: 'postgres://u@db:5432/mls',
      MODERATION_MODE: 'manual',
      ALLOW_PRIVATE_NETWORK: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1s,500ms,1h',
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: 'staging:',
      SECRET_KEY: 'k'.repeat(32),
      DATABASE_PIPELINED_CONNECTIONS: '3',
      DATABASE_STATEMENT_TIMEOUT_MS: '5000',
      EVENT_RETENTION_DAYS: '90',
      CHANGE_RETENTION_DAYS: '30',
      FEED_RUN_RETENTION_DAYS: '7',
      FEED_MAX_BYTES: '1048576',
      FEED_DOWNLOAD_TIMEOUT_MS: '60000',
      FEED_PHOTOS: 'false',
      FEED_POLL_INTERVAL_MS: '1000',
      ORPHAN_FILE_MIN_AGE: '90s',
      RATE_LIMIT_FAILURES_PER_MINUTE: '5',
      CORS_ORIGINS: 'https://agency.example, http://localhost:5173,',
      METRICS_PORT: '0',
      METRICS_HOST: '0.0.0.0',
      METRICS_TOKEN: 'm'.repeat(16),
      IMAGE_MAX_EDGE: '1920',
      IMAGE_PROCESSING_NICENESS: '0',
    })
    assert.equal(config.images.maxEdge, 1920)
    assert.equal(config.images.processingNiceness, 0)
    assert.equal(config.rateLimits.failuresPerMinute, 5)
    assert.deepEqual(config.corsOrigins, ['https://agency.example', 'http://localhost:5173'])
    assert.deepEqual(config.metrics, { port: 0, host: '0.0.0.0', token: 'm'.repeat(16) })
    assert.equal(config.databasePipelinedConnections, 3)
    assert.equal(config.databaseStatementTimeoutMs, 5000)
    assert.deepEqual(config.retention, { eventDays: 90, changeDays: 30, feedRunDays: 7, orphanFileMinAgeMs: 90_000 })
    assert.deepEqual(config.feeds, { maxBytes: 1_048_576, downloadTimeoutMs: 60_000, photos: false, pollIntervalMs: 1000 })
    assert.equal(config.redisKeyPrefix, 'staging:')
    assert.equal(config.publicBaseUrl, 'http://localhost:8080')
    assert.equal(config.moderationMode, 'manual')
    assert.equal(config.allowPrivateNetwork, true)
    assert.deepEqual(config.webhookRetryScheduleMs, [1000, 500, 3_600_000])
    assert.equal(config.secretKey, 'k'.repeat(32))
  })

  it('refuses bad values with a message naming each variable', () => {
    assert.throws(
      () =>
        loadConfig({
          DATA_DIR: dataDir(),
          PORT: 'eighty',
          DATABASE_URL: 'mysql://x',
          MODERATION_MODE: 'sometimes',
          WEBHOOK_RETRY_SCHEDULE: '5s,soon',
          SECRET_KEY: 'short',
          DATABASE_PIPELINED_CONNECTIONS: '0',
          DATABASE_STATEMENT_TIMEOUT_MS: '999',
          EVENT_RETENTION_DAYS: '0',
          CHANGE_RETENTION_DAYS: 'forever',
          ORPHAN_FILE_MIN_AGE: '1h,2h',
          REDIS_KEY_PREFIX: 'with spaces',
          CORS_ORIGINS: 'https://agency.example/app',
          METRICS_TOKEN: 'short',
          IMAGE_MAX_EDGE: '399',
          IMAGE_PROCESSING_NICENESS: '20',
        }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError)
        for (const name of [
          'PORT',
          'DATABASE_URL',
          'MODERATION_MODE',
          'WEBHOOK_RETRY_SCHEDULE',
          'SECRET_KEY',
          'DATABASE_PIPELINED_CONNECTIONS',
          'DATABASE_STATEMENT_TIMEOUT_MS',
          'EVENT_RETENTION_DAYS',
          'CHANGE_RETENTION_DAYS',
          'ORPHAN_FILE_MIN_AGE',
          'REDIS_KEY_PREFIX',
          'CORS_ORIGINS',
          'METRICS_TOKEN',
          'IMAGE_MAX_EDGE',
          'IMAGE_PROCESSING_NICENESS',
        ]) {
          assert.match(error.message, new RegExp(`${name}[= ]`))
        }
        assert.match(error.message, /expected one of auto, manual/)
        assert.match(error.message, /IMAGE_MAX_EDGE="399": expected a whole number from 400 to 16383/)
        assert.match(error.message, /"https:\/\/agency\.example\/app" is not an origin: write the scheme, host and port only, as https:\/\/agency\.example/)
        return true
      },
    )
  })

  it('names a bad secret without its value, and a bad address without its password', () => {
    // The message goes to the process's output, and from there to whatever collects its logs.
    assert.throws(
      () =>
        loadConfig({
          DATA_DIR: '/tmp/mls-config-secrets',
          SECRET_KEY: 'short-secret-key-value',
          ADMIN_API_KEY: 'admin-key-15chr',
          METRICS_TOKEN: 'metrics-tok-15c',
          DATABASE_URL: 'postgress://mls:hunter2-password@db.internal/mls',
          REDIS_URL: 'redis//:hunter3-password@cache',
        }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError)
        for (const name of ['SECRET_KEY', 'ADMIN_API_KEY', 'METRICS_TOKEN', 'REDIS_URL'])
          assert.match(error.message, new RegExp(`${name} \\(its value not shown\\)`))
        assert.match(error.message, /DATABASE_URL="postgress:\/\/mls:\*\*\*@db\.internal\/mls": expected a postgres:\/\/ URL/)
        for (const secret of ['short-secret-key-value', 'admin-key-15chr', 'metrics-tok-15c', 'hunter2-password', 'hunter3-password']) {
          assert.ok(!error.message.includes(secret), `${secret} in ${error.message}`)
        }
        return true
      },
    )
  })

  it('refuses a host, a base URL, a metrics port, S3 credentials and a retry schedule it could not use as they are', () => {
    const refused = (env: Record<string, string>, said: RegExp) =>
      assert.throws(
        () => loadConfig({ DATA_DIR: dataDir(), ...env }),
        (error: unknown) => error instanceof ConfigError && said.test(error.message),
        JSON.stringify(env),
      )
    refused({ WEBHOOK_RETRY_SCHEDULE: '5s,99999999999d' }, /WEBHOOK_RETRY_SCHEDULE=.*"99999999999d" is longer than 30 days, the longest delay taken/)
    refused({ WEBHOOK_RETRY_SCHEDULE: Array(51).fill('1s').join(',') }, /WEBHOOK_RETRY_SCHEDULE=.*51 delays; at most 50 retries are taken/)
    assert.equal(loadConfig({ DATA_DIR: dataDir(), WEBHOOK_RETRY_SCHEDULE: `30d,${Array(49).fill('0ms').join(',')}` }).webhookRetryScheduleMs.length, 50)
    refused({ HOST: 'not a host' }, /HOST="not a host": expected an IP address or a host name/)
    refused({ METRICS_HOST: 'metrics host' }, /METRICS_HOST="metrics host"/)
    for (const url of ['https://mls.example?x=1', 'https://mls.example/#top'])
      refused({ PUBLIC_BASE_URL: url }, /PUBLIC_BASE_URL=.*without a query or a fragment/)
    // Kept as URL parsers read it, which every URL the service gives then starts with.
    for (const [written, read] of [
      ['https:/mls.example', 'https://mls.example'],
      ['https:mls.example/', 'https://mls.example'],
      ['HTTPS://MLS.Example/api/', 'https://mls.example/api'],
    ])
      assert.equal(loadConfig({ DATA_DIR: dataDir(), PUBLIC_BASE_URL: written }).publicBaseUrl, read, written)
    refused({ PORT: '9464' }, /METRICS_PORT=9464: the API's own port/)
    const s3 = { STORAGE_DRIVER: 's3', S3_BUCKET: 'photos', S3_PUBLIC_URL: 'https://cdn.example' }
    refused({ ...s3, S3_ACCESS_KEY_ID: 'key' }, /S3_SECRET_ACCESS_KEY: required with S3_ACCESS_KEY_ID/)
    refused({ ...s3, S3_SECRET_ACCESS_KEY: 'secret' }, /S3_ACCESS_KEY_ID: required with S3_SECRET_ACCESS_KEY/)
    // And what they may be.
    for (const host of ['0.0.0.0', '::', 'localhost', 'api.internal.example']) assert.equal(loadConfig({ DATA_DIR: dataDir(), HOST: host }).host, host)
    assert.equal(loadConfig({ DATA_DIR: dataDir(), PORT: '9464', METRICS_PORT: '0' }).metrics.port, 0)
  })

  it('stops the server at start with that message and a non-zero exit', () => {
    const result = spawnSync(process.execPath, nodeArguments('src/server'), {
      env: { ...process.env, PORT: '99999', DATA_DIR: dataDir(), DATABASE_URL: '' },
      encoding: 'utf8',
      timeout: 60_000,
    })
    assert.equal(result.status, 1)
    assert.match(result.stderr, /Invalid configuration:\n {2}- PORT="99999": expected a whole number from 0 to 65535/)
  })
})
