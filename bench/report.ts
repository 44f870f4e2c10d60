/** The figures as a table on stdout, the targets with PASS/MISS, and everything as JSON. */
import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { ScenarioId, ScenarioResult } from './load.js'

export interface RunInfo {
  engine: string
  database_version: string
  listings: number
  published: number
  tenants: number
  owners: number
  connections: number
  duration_s: number
  warmup_s: number
  seeding_seconds: number | null
  /** pool_size: connections of the service to PostgreSQL (null on PGlite, which has one). */
  service: { pool_size: number | null; rate_limits_enabled: false; log_level: string }
}

export interface TargetCheck {
  name: string
  value: number
  target: string
  pass: boolean
}

/** Share of non-2xx answers and socket errors tolerated before a scenario counts as failing. */
const FAILURE_TOLERANCE = 0.001

type Results = Record<ScenarioId, ScenarioResult>

/** The targets of the catalogue and submission work, each checked against the figures. */
export function checkTargets(results: Results): { ratios: { b_over_a: number; c_over_a1: number }; targets: TargetCheck[] } {
  const bOverA = results.b.requests_per_second / results.a.requests_per_second
  const cOverA1 = results.c.requests_per_second / results.a1.requests_per_second
  const targets: TargetCheck[] = [
    { name: '(b) req/s vs ceiling (a)', value: bOverA, target: '>= 35%', pass: bOverA >= 0.35 },
    { name: '(b) p99 latency, ms', value: results.b.latency_p99_ms, target: '< 100', pass: results.b.latency_p99_ms < 100 },
    { name: '(c) req/s vs ceiling (a1)', value: cOverA1, target: '>= 25%', pass: cOverA1 >= 0.25 },
    { name: '(d) req/s', value: results.d.requests_per_second, target: '>= 500', pass: results.d.requests_per_second >= 500 },
    { name: '(d) p99 latency, ms', value: results.d.latency_p99_ms, target: '< 200', pass: results.d.latency_p99_ms < 200 },
    ...(['b', 'c', 'd'] as const).map((id) => {
      const failed = results[id].non_2xx + results[id].errors
      const share = failed / Math.max(1, results[id].requests_total)
      return { name: `(${id}) non-2xx + errors, share`, value: share, target: '~0 (<= 0.1%)', pass: share <= FAILURE_TOLERANCE }
    }),
  ]
  return { ratios: { b_over_a: round(bOverA, 4), c_over_a1: round(cOverA1, 4) }, targets }
}

export function printReport(info: RunInfo, results: Results): void {
  const { ratios, targets } = checkTargets(results)
  const rows = Object.values(results).map((r) => [
    `(${r.id})`,
    r.title,
    r.requests_per_second.toFixed(1),
    r.latency_p50_ms.toFixed(1),
    r.latency_p99_ms.toFixed(1),
    String(r.non_2xx),
    String(r.errors),
  ])
  console.log()
  console.log(
    `${info.engine}, ${info.listings} listings (${info.published} published), ${info.tenants} tenants; ` +
      `seeding ${info.seeding_seconds === null ? 'skipped (--skip-seed)' : `${info.seeding_seconds} s`}; ` +
      `${info.connections} connections, ${info.duration_s} s per scenario after ${info.warmup_s} s warm-up; rate limits OFF`,
  )
  console.log(table(['', 'scenario', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors'], rows))
  console.log()
  console.log(`(b)/(a)  = ${percent(ratios.b_over_a)}   (c)/(a1) = ${percent(ratios.c_over_a1)}`)
  console.log()
  console.log('Targets:')
  for (const check of targets) {
    const shown = check.name.includes('vs ceiling') || check.name.endsWith('share') ? percent(check.value) : check.value.toFixed(1)
    console.log(`  ${check.pass ? 'PASS' : 'MISS'}  ${check.name.padEnd(32)} ${shown.padStart(9)}   target ${check.target}`)
  }
  for (const r of Object.values(results)) {
    if (r.failure_samples.length === 0) continue
    console.log(`\n(${r.id}) status codes ${JSON.stringify(r.status_codes)}; first non-2xx answers:`)
    for (const sample of r.failure_samples) console.log(`  ${sample.status} ${sample.body}`)
  }
}

export function writeReport(file: string, info: RunInfo, results: Results): void {
  const cpus = os.cpus()
  const { ratios, targets } = checkTargets(results)
  const report = {
    ...info,
    node: process.version,
    cpu: { model: cpus[0]?.model ?? 'unknown', count: cpus.length },
    date: new Date().toISOString(),
    scenarios: results,
    ratios,
    targets,
  }
  mkdirSync(path.dirname(file), { recursive: true })
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`)
  console.log(`\nResults written to ${path.relative(process.cwd(), file) || file}`)
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)))
  // text columns left, figures right
  const line = (cells: string[]) => cells.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ')
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

const percent = (share: number) => `${(share * 100).toFixed(1)}%`
const round = (value: number, digits: number) => Number(value.toFixed(digits))
