/**
 * `npm run bench`: seeds a realistic MLS, starts the service and a bare-Fastify ceiling in
 * child processes, loads each scenario with autocannon from this process, and reports
 * requests/s and latency against the targets. `npm run bench -- --help` lists the flags.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'
import { migrateDatabase } from '../src/db/migrate.js'
import { startChild, stopAllChildren, type Child } from './children.js'
import { runCursorPages, type CursorFigures } from './cursor.js'
import { runFeedReplay } from './feed.js'
import { runFeedImport } from './feed-import.js'
import { fetchFixtures } from './fixtures.js'
import { runScenario, type Scenario, type ScenarioId, type ScenarioResult } from './load.js'
import { CpuMeter, describeMachine, machineLine } from './machine.js'
import { defaultOutFile, parseOptions, type BenchOptions } from './options.js'
import { printReport, writeReport, type RunInfo } from './report.js'
import { catalogueDetail, catalogueSearch, mapClusters, mapSearch, submission, type BenchRequest } from './requests.js'
import { interleavedRatio, type InterleavedRatio } from './rounds.js'
import { prepareDatabase, type PreparedDatabase } from './seed.js'
import { runUploads, type UploadFigures } from './uploads.js'
import { runWebhooks, type WebhookFigures } from './webhooks.js'

/** Fixed, so the service never generates one into DATA_DIR and every run is configured alike. */
const BENCH_SECRET_KEY = 'open-mls-bench-secret-key-0123456789'

const options = parseOptions(process.argv.slice(2))
// Everything the run keeps on disk (PGlite, the service's DATA_DIR) lives here and goes at the end.
const workDir = mkdtempSync(path.join(tmpdir(), 'mls-bench-'))

async function cleanUp(): Promise<void> {
  await stopAllChildren()
  rmSync(workDir, { recursive: true, force: true })
}

// Ctrl-C: no child outlives the bench. (An unfinished seed is one transaction: it rolls back.)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping the servers and leaving.`)
    void cleanUp().finally(() => process.exit(130))
  })
}

try {
  await main(options)
} catch (error) {
  console.error(`\nBench failed: ${(error as Error).stack ?? String(error)}`)
  process.exitCode = 1
} finally {
  await cleanUp()
}

async function main(options: BenchOptions): Promise<void> {
  // Before anything of the bench's own runs: how busy the machine was without it.
  const machine = describeMachine()
  console.error(machineLine(machine))
  const prepared = await prepare(options)

  const serviceEnv = serviceEnvironment(options)
  console.log('Rate limits are SWITCHED OFF for this run (RATE_LIMIT_ENABLED=false): the figures are the service’s, not the limiter’s.')
  const service = await startChild('service', 'bench/serve.ts', serviceEnv)
  const ceiling = await startCeiling(service, prepared.publishedIds[0]!)
  await smokeTest(service, prepared)

  // Each scenario first runs unmeasured for a moment: JIT, connection pools and caches settle.
  const warmup = Math.min(3, Math.max(1, Math.round(options.duration / 5)))
  const load = { connections: options.connections, duration: options.duration, warmup }
  const scenarios = defineScenarios(service, ceiling, prepared).filter((scenario) => (options.scenarios as string[]).includes(scenario.id))
  const meter = new CpuMeter({ service: service.pid, ceiling: ceiling.pid }, options.databaseUrl && new URL(options.databaseUrl).pathname.slice(1))
  const results: Partial<Record<ScenarioId, ScenarioResult>> = {}
  for (const scenario of scenarios) results[scenario.id] = await runScenario(scenario, load, meter)
  const interleaved = await ratioRounds(scenarios, options, meter)
  // (e) last: the uploads still in flight when it stops are processed after it, and would
  // weigh on whatever scenario came next.
  let uploads: UploadFigures | undefined
  if (options.scenarios.includes('e')) {
    const run = await runUploads(service, prepared, load, loadConfig(serviceEnv).images.processingConcurrency)
    Object.assign(results, run.results)
    uploads = run.figures
  }

  // (f) after (e) for the same reason, and because its workers would weigh on any other scenario.
  let webhooks: WebhookFigures | undefined
  if (options.scenarios.includes('f')) webhooks = await runWebhooks(service, serviceEnv, options.databaseUrl!, load)

  // (i) with the main service, before it stops for (j).
  const feedReplay = options.scenarios.includes('i') ? await runFeedReplay(service) : undefined
  // (feed) after the others: its 100,000 listings would change what they read.
  const feedImport = options.scenarios.includes('feed')
    ? await runFeedImport(service, serviceEnv, {
        connections: options.connections,
        rounds: Math.max(1, options.rounds),
        roundSeconds: options.roundDuration,
        databaseUrl: options.databaseUrl!,
      })
    : undefined

  // (j) last, on a service of its own without the answer cache: this one goes first (PGlite admits one process).
  let cursorPages: CursorFigures | undefined
  if (options.scenarios.includes('j')) {
    await service.stop()
    cursorPages = await runCursorPages(serviceEnv, { rounds: Math.max(1, options.rounds), seconds: options.roundDuration })
  }

  const info: RunInfo = {
    machine,
    engine: options.engine,
    database_version: prepared.serverVersion,
    listings: prepared.listings,
    published: prepared.published,
    tenants: prepared.tenants,
    owners: prepared.owners,
    connections: options.connections,
    duration_s: options.duration,
    warmup_s: warmup,
    seeding_seconds: prepared.seedingSeconds === null ? null : Number(prepared.seedingSeconds.toFixed(1)),
    database_bytes: prepared.databaseBytes,
    service: {
      pool_size: options.engine === 'postgres' ? loadConfig(serviceEnv).databasePoolSize : null,
      pipelined_connections: options.engine === 'postgres' ? loadConfig(serviceEnv).databasePipelinedConnections : null,
      rate_limits_enabled: false,
      log_level: 'warn',
    },
  }
  printReport(info, results, uploads, webhooks, interleaved, { cursorPages, feedReplay, feedImport })
  writeReport(options.out ?? defaultOutFile(options.engine, prepared.listings), info, results, uploads, webhooks, interleaved, {
    cursorPages,
    feedReplay,
    feedImport,
  })
}

/**
 * The ratios the targets are judged on: (b)/(a), (c)/(a1) and (g)/(a) from interleaved rounds,
 * for each pair whose both scenarios ran (and so are warm).
 */
async function ratioRounds(scenarios: Scenario[], options: BenchOptions, meter: CpuMeter): Promise<InterleavedRatio[]> {
  const byId = new Map(scenarios.map((scenario) => [scenario.id, scenario]))
  const ratios: InterleavedRatio[] = []
  if (options.rounds === 0) return ratios
  for (const [ceilingId, scenarioId] of [
    ['a', 'b'],
    ['a1', 'c'],
    ['a', 'g'],
  ] as const) {
    const ceiling = byId.get(ceilingId)
    const scenario = byId.get(scenarioId)
    if (!ceiling || !scenario) continue
    ratios.push(await interleavedRatio(ceiling, scenario, { rounds: options.rounds, seconds: options.roundDuration, connections: options.connections }, meter))
  }
  return ratios
}

/**
 * Creates the database DATABASE_URL names when its server has none of that name (the bench
 * wipes it, so it is the bench's own), from the server's `postgres` database. Where that cannot
 * be reached, opening DATABASE_URL says what is wrong.
 */
async function ensureDatabase(databaseUrl: string): Promise<void> {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1))
  const maintenance = new URL(databaseUrl)
  maintenance.pathname = '/postgres'
  const client = new pg.Client({ connectionString: maintenance.toString() })
  try {
    await client.connect()
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name])
    if (rowCount === 0) {
      await client.query(`create database ${client.escapeIdentifier(name)}`)
      console.error(`Created the database ${name}.`)
    }
  } catch {
    // Not allowed to look or create: DATABASE_URL is opened as it is.
  } finally {
    await client.end().catch(() => undefined)
  }
}

/** Migrates and seeds (or, with --skip-seed, inspects) the database, then lets go of it. */
async function prepare(options: BenchOptions): Promise<PreparedDatabase> {
  console.error(`Opening ${options.engine === 'postgres' ? 'PostgreSQL at DATABASE_URL' : `PGlite in ${workDir}`}…`)
  if (options.databaseUrl) await ensureDatabase(options.databaseUrl)
  const handle = await openDatabase({ databaseUrl: options.databaseUrl, pgliteDir: path.join(workDir, 'pglite'), poolSize: 2 })
  try {
    await migrateDatabase(handle)
    const prepared = await prepareDatabase(handle, options)
    console.error(`Dataset: ${prepared.listings} listings (${prepared.published} published), ${prepared.tenants} bench tenants, ${prepared.owners} owners.`)
    return prepared
  } finally {
    // PGlite admits one process: the service child opens it next.
    await handle.close()
  }
}

/** The service's configuration, by environment as in production, with the bench's overrides. */
function serviceEnvironment(options: BenchOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    RATE_LIMIT_ENABLED: 'false',
    // (f) delivers webhooks to a receiver on loopback.
    ALLOW_PRIVATE_NETWORK: 'true',
    LOG_LEVEL: 'warn',
    DATA_DIR: workDir, // PGlite, if used, is in DATA_DIR/pglite, where the bench seeded it
    SECRET_KEY: BENCH_SECRET_KEY,
    HOST: '127.0.0.1',
    PORT: '0',
  }
  // Not part of what is measured: no admin routes are called, and rate limits are off.
  delete env.ADMIN_API_KEY
  delete env.REDIS_URL
  if (options.databaseUrl) env.DATABASE_URL = options.databaseUrl
  else delete env.DATABASE_URL
  return env
}

/** The ceiling server, serving a real page and item fetched once from the service. */
async function startCeiling(service: Child, publishedId: number): Promise<Child> {
  const fixturesFile = path.join(workDir, 'ceiling-fixtures.json')
  writeFileSync(fixturesFile, JSON.stringify(await fetchFixtures(service.url, publishedId)))
  return startChild('ceiling', 'bench/ceiling.ts', {
    ...process.env,
    BENCH_FIXTURES: fixturesFile,
  })
}

function defineScenarios(service: Child, ceiling: Child, prepared: PreparedDatabase): Scenario[] {
  const fixed = (path: string) => (): BenchRequest => ({ method: 'GET', path })
  return [
    { id: 'a', title: 'ceiling GET /page (50 items)', baseUrl: ceiling.url, next: fixed('/page') },
    { id: 'a1', title: 'ceiling GET /item', baseUrl: ceiling.url, next: fixed('/item') },
    { id: 'b', title: 'GET /mls/properties, random filters', baseUrl: service.url, next: catalogueSearch },
    { id: 'c', title: 'GET /mls/properties/{id}', baseUrl: service.url, next: () => catalogueDetail(prepared.publishedIds) },
    { id: 'd', title: 'POST /properties', baseUrl: service.url, next: () => submission(prepared.tenants) },
    { id: 'g', title: 'GET /mls/properties?bbox=…, random map box and filters', baseUrl: service.url, next: mapSearch },
    { id: 'h', title: 'GET /mls/clusters, a city’s box, random filters', baseUrl: service.url, next: mapClusters },
  ]
}

/**
 * A few requests of each kind, one at a time, before the load: a request the generators get
 * wrong (or a service that answers errors) shows up here with its body, not as a bare count.
 */
async function smokeTest(service: Child, prepared: PreparedDatabase): Promise<void> {
  const samples: [string, () => BenchRequest, number][] = [
    ['b', catalogueSearch, 30],
    ['c', () => catalogueDetail(prepared.publishedIds), 5],
    ['d', () => submission(prepared.tenants), 5],
    ['g', mapSearch, 10],
    ['h', mapClusters, 5],
  ]
  for (const [id, next, count] of samples) {
    for (let i = 0; i < count; i++) {
      const request = next()
      const response = await fetch(service.url + request.path, { method: request.method, headers: request.headers, body: request.body })
      const body = await response.text()
      if (!response.ok) console.error(`Smoke test (${id}): ${request.method} ${request.path} answered ${response.status}: ${body.slice(0, 500)}`)
    }
  }
}
