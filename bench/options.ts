import path from 'node:path'
import { parseArgs } from 'node:util'
import type { DatabaseKind } from '../src/db/client.js'

export interface BenchOptions {
  engine: DatabaseKind
  /** Set for PostgreSQL, undefined for PGlite. */
  databaseUrl: string | undefined
  listings: number
  tenants: number
  /** Seconds of measurement per scenario. */
  duration: number
  connections: number
  skipSeed: boolean
  /** --out as given (resolved), or undefined for the default, named after the listings measured. */
  out: string | undefined
  /** Listings per INSERT: PGlite runs in this process's memory, so it gets smaller bites. */
  chunkSize: number
  /** The scenarios to run, in the order of SCENARIOS whatever the order given. */
  scenarios: ScenarioName[]
  /** Interleaved rounds (ceiling, scenario, …) each ratio to the ceiling is taken from; 0 skips them. */
  rounds: number
  /** Seconds each side of a round is measured. */
  roundDuration: number
}

/** What --scenarios accepts; (e) brings its catalogue reads (e1) and (e2) along; (f) and (feed) need PostgreSQL; (i) replays the change feed; (feed) imports an agency's feed; (j) is pages by cursor. */
export const SCENARIOS = ['a', 'a1', 'b', 'c', 'd', 'g', 'h', 'e', 'f', 'i', 'feed', 'j'] as const
export type ScenarioName = (typeof SCENARIOS)[number]

export const BENCH_DIR = import.meta.dirname
export const REPO_ROOT = path.dirname(BENCH_DIR)

const USAGE = `Usage: npm run bench -- [options]

  --listings N      listings to seed (default 1000000; 100000 with --pglite)
  --tenants N       agencies, one API key each (default 200)
  --duration S      seconds measured per scenario (default 15)
  --connections C   concurrent connections (default 50)
  --pglite          benchmark the embedded PGlite instead of PostgreSQL
  --skip-seed       reuse an already seeded PostgreSQL database
  --out FILE        results JSON (default bench/results/bench-<engine>-<listings>.json)
  --scenarios LIST  comma-separated subset of ${SCENARIOS.join(',')} (default all); e.g. e for
                    the photo uploads alone. Targets of scenarios not run are left out.
                    (f), the webhook deliveries, needs PostgreSQL and is left out with --pglite.
                    (feed): a 100,000-offer Yandex.Realty feed imported by a feed worker
                    process (photos off); PostgreSQL only, like (f).
                    (j): the first catalogue page against the page 10,000 deep by cursor.
  --rounds N        interleaved rounds (ceiling, scenario, ceiling, scenario…) that the ratios
                    (b)/(a), (c)/(a1) and (g)/(a) are judged on, as their median (default 3; 0: none);
                    (j)'s rounds (first page, deep page…) and (feed)'s imports, at least 1
  --round-duration S  seconds measured on each side of a round (default 10)

PostgreSQL is taken from DATABASE_URL, which the bench WIPES (reference data aside):
give it a database of its own, e.g. postgres://postgres@127.0.0.1:5432/mls_bench.`

/** Reads the flags; a bad one prints the usage and exits 1. */
export function parseOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): BenchOptions {
  let values
  try {
    ;({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        listings: { type: 'string' },
        tenants: { type: 'string' },
        duration: { type: 'string' },
        connections: { type: 'string' },
        pglite: { type: 'boolean', default: false },
        'skip-seed': { type: 'boolean', default: false },
        out: { type: 'string' },
        scenarios: { type: 'string' },
        rounds: { type: 'string' },
        'round-duration': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }))
  } catch (error) {
    fail((error as Error).message)
  }
  if (values.help) {
    console.log(USAGE)
    process.exit(0)
  }

  const engine: DatabaseKind = values.pglite ? 'pglite' : 'postgres'
  const databaseUrl = engine === 'postgres' ? env.DATABASE_URL?.trim() || undefined : undefined
  if (engine === 'postgres' && !databaseUrl) {
    fail('DATABASE_URL is not set. Point it at a PostgreSQL database the bench may wipe (e.g. postgres://postgres@127.0.0.1:5432/mls_bench), or pass --pglite.')
  }
  if (engine === 'pglite' && values['skip-seed']) {
    fail('--skip-seed needs a database that outlives the run; with --pglite every run starts in a fresh temporary directory.')
  }
  const listings = positiveInteger('--listings', values.listings, engine === 'pglite' ? 100_000 : 1_000_000)
  return {
    engine,
    databaseUrl,
    listings,
    tenants: positiveInteger('--tenants', values.tenants, 200),
    duration: positiveInteger('--duration', values.duration, 15),
    connections: positiveInteger('--connections', values.connections, 50),
    skipSeed: values['skip-seed'],
    out: values.out === undefined ? undefined : path.resolve(values.out),
    chunkSize: engine === 'pglite' ? 10_000 : 100_000,
    scenarios: scenarioList(values.scenarios, engine),
    rounds: values.rounds === '0' ? 0 : positiveInteger('--rounds', values.rounds, 3),
    roundDuration: positiveInteger('--round-duration', values['round-duration'], 10),
  }
}

function scenarioList(raw: string | undefined, engine: DatabaseKind): ScenarioName[] {
  // Webhook workers are processes of their own, and PGlite admits one process.
  if (raw === undefined) return SCENARIOS.filter((name) => engine === 'postgres' || (name !== 'f' && name !== 'feed'))
  if (engine === 'pglite' && raw.split(',').some((name) => name.trim() === 'f'))
    fail('(f) runs webhook workers as separate processes: it needs PostgreSQL, not --pglite.')
  if (engine === 'pglite' && raw.split(',').some((name) => name.trim() === 'feed'))
    fail('(feed) runs a feed worker as a separate process: it needs PostgreSQL, not --pglite.')
  const given = raw.split(',').map((name) => name.trim())
  const unknown = given.filter((name) => !(SCENARIOS as readonly string[]).includes(name))
  if (unknown.length > 0 || given.length === 0) fail(`--scenarios expects names from ${SCENARIOS.join(',')}, got "${raw}"`)
  return SCENARIOS.filter((name) => given.includes(name))
}

/** `bench/results/bench-<engine>-<listings>.json`. */
export function defaultOutFile(engine: DatabaseKind, listings: number): string {
  return path.join(BENCH_DIR, 'results', `bench-${engine}-${listings}.json`)
}

function positiveInteger(flag: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) fail(`${flag} expects a whole number of at least 1, got "${raw}"`)
  return Number(raw)
}

function fail(message: string): never {
  console.error(`${message}\n\n${USAGE}`)
  process.exit(1)
}
