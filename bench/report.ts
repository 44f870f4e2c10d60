/** The figures as a table on stdout, the targets with PASS/MISS, and everything as JSON. */
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { ScenarioId, ScenarioResult } from './load.js'
import { cpuLine, machineLine, type MachineInfo } from './machine.js'
import type { CursorFigures } from './cursor.js'
import type { FeedReplayFigures } from './feed.js'
import { FEED_WORKER_HEAP_MIB, type FeedImportFigures } from './feed-import.js'

/** Figures of the scenarios that run after the load scenarios, each its own way. */
export interface LateFigures {
  cursorPages?: CursorFigures | undefined
  feedReplay?: FeedReplayFigures | undefined
  feedImport?: FeedImportFigures | undefined
}
import type { InterleavedRatio } from './rounds.js'
import type { UploadFigures } from './uploads.js'
import type { WebhookFigures } from './webhooks.js'

export interface RunInfo {
  machine: MachineInfo
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
  database_bytes: number
  /**
   * The service's connections to PostgreSQL: its pool, and the pipelined ones the catalogue
   * uses (null on PGlite, which has one).
   */
  service: { pool_size: number | null; pipelined_connections: number | null; rate_limits_enabled: false; log_level: string }
}

export interface TargetCheck {
  name: string
  value: number
  target: string
  /** null: a figure the issue asks to show, with no number to meet (printed as INFO). */
  pass: boolean | null
  /** How to print the value, where a bare number would not say enough. */
  shown?: string
}

/** Share of non-2xx answers and socket errors tolerated before a scenario counts as failing. */
const FAILURE_TOLERANCE = 0.001

/** The scenarios that ran (see --scenarios). */
type Results = Partial<Record<ScenarioId, ScenarioResult>>
type Ratios = { b_over_a?: number; c_over_a1?: number; g_over_a?: number; e2_p99_over_e1_p99?: number; f_filtered_over_unfiltered_deliveries?: number }

/** The targets of the scenarios that ran, each checked against the figures. */
export function checkTargets(
  results: Results,
  uploads?: UploadFigures,
  webhooks?: WebhookFigures,
  interleaved: readonly InterleavedRatio[] = [],
  { cursorPages, feedReplay, feedImport }: LateFigures = {},
): { ratios: Ratios; targets: TargetCheck[] } {
  const { a, a1, b, c, d, e, e1, e2, g } = results
  const ratios: Ratios = {}
  const targets: TargetCheck[] = []
  const rounds = (id: ScenarioId) => interleaved.find((ratio) => ratio.scenario === id)
  // A ratio is judged on the median of its interleaved rounds; a single run's is shown beside it.
  const ratioTargets = (id: 'b' | 'c' | 'g', ceilingId: 'a' | 'a1', single: number | undefined, minimum: number) => {
    const name = `(${id}) req/s vs ceiling (${ceilingId})`
    const judged = rounds(id)
    const target = `>= ${minimum * 100}%`
    if (judged) {
      const spread = `${percent(judged.ratio_min)}–${percent(judged.ratio_max)}`
      targets.push({
        name: `${name}, median of ${judged.rounds.length}`,
        value: judged.ratio_median,
        target: `${target} (spread ${spread})`,
        pass: judged.ratio_median >= minimum,
        shown: percent(judged.ratio_median),
      })
      if (single !== undefined) targets.push({ name: `${name}, single run`, value: single, target: 'shown, not judged', pass: null, shown: percent(single) })
    } else if (single !== undefined) {
      targets.push({ name, value: single, target, pass: single >= minimum, shown: percent(single) })
    }
  }
  // A p99 is judged on the median of the interleaved rounds where there are some.
  const p99Target = (id: 'b' | 'g' | 'h', limit: number) => {
    const judged = rounds(id)
    const result = results[id]
    if (judged) {
      targets.push({
        name: `(${id}) p99 latency, ms, median of ${judged.rounds.length}`,
        value: judged.p99_median_ms,
        target: `< ${limit} (worst round ${judged.p99_max_ms})`,
        pass: judged.p99_median_ms < limit,
      })
    } else if (result) {
      targets.push({ name: `(${id}) p99 latency, ms`, value: result.latency_p99_ms, target: `< ${limit}`, pass: result.latency_p99_ms < limit })
    }
  }
  if (a && b) ratios.b_over_a = round(b.requests_per_second / a.requests_per_second, 4)
  ratioTargets('b', 'a', ratios.b_over_a, 0.35)
  p99Target('b', 100)
  if (a1 && c) ratios.c_over_a1 = round(c.requests_per_second / a1.requests_per_second, 4)
  ratioTargets('c', 'a1', ratios.c_over_a1, 0.25)
  if (a && g) ratios.g_over_a = round(g.requests_per_second / a.requests_per_second, 4)
  ratioTargets('g', 'a', ratios.g_over_a, 0.25)
  p99Target('g', 100)
  p99Target('h', 150)
  if (d) {
    targets.push({ name: '(d) req/s', value: d.requests_per_second, target: '>= 500', pass: d.requests_per_second >= 500 })
    targets.push({ name: '(d) p99 latency, ms', value: d.latency_p99_ms, target: '< 200', pass: d.latency_p99_ms < 200 })
  }
  if (e && uploads) {
    const noTarget = 'none given, shown'
    targets.push({ name: '(e) photos/s', value: uploads.photos_per_second, target: '>= 7.5', pass: uploads.photos_per_second >= 7.5 })
    targets.push({ name: '(e) p99 latency, ms', value: e.latency_p99_ms, target: noTarget, pass: null })
    const memory = uploads.service_memory
    if (memory) targets.push({ name: '(e) service peak RSS, MiB', value: memory.rss_peak_mib, target: noTarget, pass: null })
  }
  if (e1 && e2) {
    // autocannon's latencies are whole milliseconds: a p99 of 0 must not divide
    ratios.e2_p99_over_e1_p99 = round(e2.latency_p99_ms / Math.max(e1.latency_p99_ms, 1), 4)
    targets.push({
      name: '(e2) reads p99 during (e), ms',
      value: e2.latency_p99_ms,
      target: `<= 2 x (e1) alone ${e1.latency_p99_ms.toFixed(1)} ms: x${ratios.e2_p99_over_e1_p99.toFixed(2)}`,
      pass: ratios.e2_p99_over_e1_p99 <= 2,
    })
  }
  if (webhooks) {
    targets.push({
      name: '(f) deliveries/s, 2 workers',
      value: webhooks.deliveries_per_second,
      target: '>= 2000',
      pass: webhooks.deliveries_per_second >= 2000,
    })
    targets.push({ name: '(f) publication→delivery p99, ms', value: webhooks.latency_p99_ms, target: '< 1000', pass: webhooks.latency_p99_ms < 1000 })
    targets.push({
      name: '(f) idle publication→delivery p50, ms',
      value: webhooks.idle.latency_p50_ms,
      target: '< 100',
      pass: webhooks.idle.latency_p50_ms < 100,
    })
    targets.push({
      name: '(f) deliveries lost',
      value: webhooks.lost_deliveries ?? Number.NaN,
      target: '0',
      pass: webhooks.lost_deliveries === 0,
      shown: webhooks.lost_deliveries === null ? 'unknown: some still waiting' : undefined,
    })
    targets.push({ name: '(f) repeated webhook-ids', value: webhooks.repeated_webhook_ids, target: '0', pass: webhooks.repeated_webhook_ids === 0 })
    targets.push({
      name: '(f) undelivered after the drain',
      value: webhooks.undelivered_after_drain,
      target: '0',
      pass: webhooks.undelivered_after_drain === 0,
    })
    const filtered = webhooks.filtered
    ratios.f_filtered_over_unfiltered_deliveries = filtered.ratio_to_unfiltered
    targets.push({
      name: `(f) deliveries/s, ${filtered.subscriptions} filtered subscriptions`,
      value: filtered.deliveries_per_second,
      target: `>= 80% of unfiltered ${webhooks.deliveries_per_second.toFixed(1)}/s: ${percent(filtered.ratio_to_unfiltered)}`,
      pass: filtered.ratio_to_unfiltered >= 0.8,
    })
    targets.push({
      name: '(f) filtered: deliveries lost',
      value: filtered.lost_deliveries ?? Number.NaN,
      target: '0',
      pass: filtered.lost_deliveries === 0,
      shown: filtered.lost_deliveries === null ? 'unknown: some still waiting' : undefined,
    })
  }
  if (feedReplay) {
    targets.push({
      name: `(i) the whole change feed replayed (${feedReplay.changes} changes)`,
      value: feedReplay.seconds,
      // A million changes in two minutes, judged as the rate at any size.
      target: '>= 8,334 changes/s (a million in < 120 s)',
      pass: feedReplay.changes_per_second >= 1_000_000 / 120,
      shown: `${feedReplay.seconds} s, ${feedReplay.changes_per_second.toFixed(0)} changes/s`,
    })
  }
  if (feedImport) {
    const spread = (values: number[], format: (value: number) => string) =>
      values.length > 1 ? ` (spread ${format(Math.min(...values))}–${format(Math.max(...values))})` : ''
    const rounds = feedImport.rounds
    const of = `median of ${rounds.length}`
    targets.push({
      name: `(feed) ${feedImport.offers} offers imported, photos off, ${of}`,
      value: feedImport.offers_per_second_median,
      target: `>= 1,000 offers/s${spread(
        rounds.map((round) => round.offers_per_second),
        String,
      )}`,
      pass: feedImport.status !== 'failed' && feedImport.offers_per_second_median >= 1000,
      shown: `${feedImport.offers_per_second_median} offers/s`,
    })
    if (feedImport.worker_rss_growth_median_mib !== null) {
      targets.push({
        name: `(feed) worker RSS growth during the import, ${of}`,
        value: feedImport.worker_rss_growth_median_mib,
        target: `< 150 MiB (old space capped at ${FEED_WORKER_HEAP_MIB} MiB)${spread(
          rounds.map((round) => round.worker_rss_growth_mib!),
          String,
        )}`,
        pass: feedImport.worker_rss_growth_median_mib < 150,
        shown: `${feedImport.worker_rss_growth_median_mib} MiB`,
      })
    }
    targets.push({
      name: `(feed) catalogue p99 during / idle, ${of}`,
      value: feedImport.catalogue_p99_ratio_median,
      target: `<= 2 x${spread(
        rounds.map((round) => round.catalogue_p99_ratio),
        (ratio) => `x${ratio.toFixed(2)}`,
      )}`,
      pass: feedImport.catalogue_p99_ratio_median <= 2,
      shown: `x${feedImport.catalogue_p99_ratio_median.toFixed(2)}`,
    })
  }
  if (cursorPages) {
    targets.push({
      name: `(j) page ${cursorPages.deep_page} by cursor / page 1, latency`,
      value: cursorPages.ratio_median,
      target: `<= 2 x, median of ${cursorPages.rounds.length} (spread x${cursorPages.ratio_min.toFixed(2)}–x${cursorPages.ratio_max.toFixed(2)})`,
      pass: cursorPages.ratio_median <= 2,
      shown: `x${cursorPages.ratio_median.toFixed(2)}`,
    })
    const failed = cursorPages.rounds.reduce((sum, round) => sum + round.first.non_2xx + round.first.errors + round.deep.non_2xx + round.deep.errors, 0)
    targets.push({ name: '(j) non-2xx + errors', value: failed, target: '0', pass: failed === 0, shown: String(failed) })
  }
  for (const id of ['b', 'c', 'd', 'e', 'e1', 'e2', 'g', 'h'] as const) {
    const result = results[id]
    if (!result) continue
    const share = (result.non_2xx + result.errors) / Math.max(1, result.requests_total)
    targets.push({ name: `(${id}) non-2xx + errors, share`, value: share, target: '~0 (<= 0.1%)', pass: share <= FAILURE_TOLERANCE, shown: percent(share) })
  }
  return { ratios, targets }
}

export function printReport(
  info: RunInfo,
  results: Results,
  uploads?: UploadFigures,
  webhooks?: WebhookFigures,
  interleaved: readonly InterleavedRatio[] = [],
  late: LateFigures = {},
): void {
  const { ratios, targets } = checkTargets(results, uploads, webhooks, interleaved, late)
  const rows = Object.values(results).map((r) => [
    `(${r.id})`,
    r.title,
    String(r.connections),
    r.requests_per_second.toFixed(1),
    r.latency_p50_ms.toFixed(1),
    r.latency_p99_ms.toFixed(1),
    String(r.non_2xx),
    String(r.errors),
  ])
  console.log()
  console.log(machineLine(info.machine))
  console.log(
    `${info.engine}, ${info.listings} listings (${info.published} published), ${info.tenants} tenants, database ${mib(info.database_bytes)}; ` +
      `seeding ${info.seeding_seconds === null ? 'skipped (--skip-seed)' : `${info.seeding_seconds} s`}; ` +
      `${info.connections} connections, ${info.duration_s} s per scenario after ${info.warmup_s} s warm-up; rate limits OFF`,
  )
  if (rows.length > 0) console.log(table(['', 'scenario', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors'], rows))
  const shownRatios = [
    ratios.b_over_a === undefined ? '' : `(b)/(a)  = ${percent(ratios.b_over_a)}`,
    ratios.c_over_a1 === undefined ? '' : `(c)/(a1) = ${percent(ratios.c_over_a1)}`,
    ratios.g_over_a === undefined ? '' : `(g)/(a)  = ${percent(ratios.g_over_a)}`,
  ].filter(Boolean)
  if (shownRatios.length > 0) console.log(`\nSingle runs: ${shownRatios.join('   ')}`)
  for (const ratio of interleaved) printInterleaved(ratio)
  const measured = Object.values(results).filter((result) => result.cpu)
  if (measured.length > 0) {
    console.log('\nCPU while measured (cores busy on average):')
    for (const result of measured) console.log(`  (${result.id}) ${cpuLine(result.cpu!, result.requests_per_second)}`)
  }
  if (results.e && uploads) printUploads(info, results, uploads)
  if (webhooks) {
    console.log()
    console.log(
      `(f) webhooks: ${webhooks.publications_per_second} publications/s × ${webhooks.subscribers} subscribers = ${webhooks.offered_deliveries_per_second} deliveries/s offered, ${webhooks.workers} worker processes; ` +
        `delivered ${webhooks.deliveries_per_second.toFixed(1)}/s (${webhooks.deliveries_measured} in ${info.duration_s} s), ` +
        `publication→delivery p50 ${webhooks.latency_p50_ms} ms, p99 ${webhooks.latency_p99_ms} ms, max ${webhooks.latency_max_ms} ms; ` +
        `${webhooks.undelivered_after_drain} left after the drain; ${webhooks.lost_deliveries ?? 'unknown how many'} lost; ${webhooks.repeated_webhook_ids} repeated webhook-ids`,
    )
    console.log(
      `    CPU over the measured seconds, share of one core: receiver ${percent(webhooks.receiver_cpu_share)}, ` +
        `workers ${webhooks.worker_cpu_shares.map((share) => percent(share)).join(' and ')}` +
        (webhooks.database_cpu_share === null ? '' : `, PostgreSQL backends ${percent(webhooks.database_cpu_share)}`),
    )
    console.log(
      `    ${webhooks.idle.publications} single publications on the idle system: publication→delivery p50 ${webhooks.idle.latency_p50_ms} ms, ` +
        `p99 ${webhooks.idle.latency_p99_ms} ms, max ${webhooks.idle.latency_max_ms} ms`,
    )
    const filtered = webhooks.filtered
    console.log(
      `(f) filtered: ${filtered.publications_per_second} publications/s × ${filtered.subscriptions} filtered subscriptions (an event matches ${percent(filtered.match_share)} of them) = ` +
        `${filtered.offered_deliveries_per_second} deliveries/s offered; delivered ${filtered.deliveries_per_second.toFixed(1)}/s (${filtered.deliveries_measured} in ${info.duration_s} s), ` +
        `${percent(filtered.ratio_to_unfiltered)} of the unfiltered run; publication→delivery p50 ${filtered.latency_p50_ms} ms, p99 ${filtered.latency_p99_ms} ms, max ${filtered.latency_max_ms} ms; ` +
        `${filtered.undelivered_after_drain} left after the drain; ${filtered.lost_deliveries ?? 'unknown how many'} lost; ${filtered.repeated_webhook_ids} repeated webhook-ids`,
    )
    console.log(
      `    CPU, share of one core: workers ${filtered.worker_cpu_shares.map((share) => percent(share)).join(' and ')}` +
        (filtered.database_cpu_share === null ? '' : `, PostgreSQL backends ${percent(filtered.database_cpu_share)}`),
    )
  }
  if (late.feedReplay) printFeedReplay(late.feedReplay)
  if (late.feedImport) printFeedImport(late.feedImport)
  if (late.cursorPages) printCursorPages(late.cursorPages)
  console.log()
  console.log('Targets:')
  for (const check of targets) {
    const verdict = check.pass === null ? 'INFO' : check.pass ? 'PASS' : 'MISS'
    const shown = check.shown ?? check.value.toFixed(1)
    console.log(`  ${verdict}  ${check.name.padEnd(44)} ${shown.padStart(9)}   target ${check.target}`)
  }
  for (const r of Object.values(results)) {
    if (r.failure_samples.length === 0) continue
    console.log(`\n(${r.id}) status codes ${JSON.stringify(r.status_codes)}; first non-2xx answers:`)
    for (const sample of r.failure_samples) console.log(`  ${sample.status} ${sample.body}`)
  }
}

function printInterleaved(ratio: InterleavedRatio): void {
  console.log()
  console.log(
    `(${ratio.scenario})/(${ratio.ceiling}) over ${ratio.rounds.length} interleaved rounds of ${ratio.seconds_per_run} s each: ` +
      `median ${percent(ratio.ratio_median)} (${percent(ratio.ratio_min)}–${percent(ratio.ratio_max)}); ` +
      `(${ratio.ceiling}) ${ratio.ceiling_rps_median.toFixed(1)} req/s, (${ratio.scenario}) ${ratio.scenario_rps_median.toFixed(1)} req/s, ` +
      `(${ratio.scenario}) p99 ${ratio.p99_median_ms} ms (worst ${ratio.p99_max_ms})`,
  )
  for (const [index, round] of ratio.rounds.entries()) {
    console.log(
      `  round ${index + 1}: (${ratio.ceiling}) ${round.ceiling.requests_per_second.toFixed(1)}, ` +
        `(${ratio.scenario}) ${round.scenario.requests_per_second.toFixed(1)} req/s p99 ${round.scenario.latency_p99_ms} ms: ${percent(round.ratio)}` +
        (round.scenario.cpu ? `; during (${ratio.scenario}) ${cpuLine(round.scenario.cpu, round.scenario.requests_per_second)}` : ''),
    )
  }
}

function printFeedReplay(figures: FeedReplayFigures): void {
  console.log()
  console.log(
    `(i) change feed from its start, ${figures.page_size} a page, one connection: ${figures.changes} changes (${figures.upserts} upserts, ${figures.removes} removes) ` +
      `in ${figures.pages} pages, ${(figures.bytes / 1024 / 1024).toFixed(1)} MiB, ${figures.seconds} s: ${figures.changes_per_second.toFixed(0)} changes/s; slowest page ${figures.slowest_page_ms} ms`,
  )
}

function printFeedImport(figures: FeedImportFigures): void {
  console.log()
  console.log(`(feed) a ${figures.offers}-offer Yandex.Realty feed, photos off, imported ${figures.rounds.length} times, each into the agency without it:`)
  figures.rounds.forEach((round, index) =>
    console.log(
      `  round ${index + 1}: ${round.status} in ${round.seconds} s, ${round.offers_per_second} offers/s ` +
        `(${Object.entries(round.counts)
          .map(([name, count]) => `${name} ${count}`)
          .join(', ')}); ` +
        `worker (--max-old-space-size=${FEED_WORKER_HEAP_MIB}) RSS ${round.worker_rss_before_mib ?? '?'} MiB before, ${round.worker_rss_peak_mib ?? '?'} MiB at most; ` +
        `catalogue p99 ${round.catalogue_idle.latency_p99_ms} ms idle, ${round.catalogue_during.latency_p99_ms} ms during (x${round.catalogue_p99_ratio.toFixed(2)})`,
    ),
  )
}

function printCursorPages(figures: CursorFigures): void {
  console.log()
  console.log(
    `(j) catalogue newest first, ${figures.limit} a page, answer cache off, ${figures.connections} connection: page 1 against page ${figures.deep_page} ` +
      `by cursor (${figures.rows_before} listings in; walked to in ${figures.walk_seconds} s), ${figures.rounds.length} interleaved rounds of ${figures.seconds_per_run} s each: ` +
      `mean latency ${figures.first_latency_avg_median_ms} ms against ${figures.deep_latency_avg_median_ms} ms (medians), ratio median x${figures.ratio_median.toFixed(2)}`,
  )
  for (const [index, round] of figures.rounds.entries()) {
    console.log(
      `  round ${index + 1}: page 1 ${round.first.latency_avg_ms} ms (p99 ${round.first.latency_p99_ms}, ${round.first.requests_per_second.toFixed(1)} req/s), ` +
        `page ${figures.deep_page} ${round.deep.latency_avg_ms} ms (p99 ${round.deep.latency_p99_ms}, ${round.deep.requests_per_second.toFixed(1)} req/s): x${round.ratio.toFixed(2)}`,
    )
  }
}

/** The photo figures the table has no column for: the file, photos/s, memory, the reads beside. */
function printUploads(info: RunInfo, results: Results, uploads: UploadFigures): void {
  const { e, e1, e2 } = results
  const { fixture, service_memory: memory } = uploads
  console.log()
  console.log(
    `(e) photo ${fixture.width}×${fixture.height} JPEG, ${fixture.bytes} bytes (${(fixture.bytes / 1e6).toFixed(2)} MB); ` +
      `processing concurrency ${uploads.processing_concurrency}; spread over ${uploads.properties} properties of tenant ${uploads.tenant}`,
  )
  console.log(
    `(e) ${uploads.photos_per_second.toFixed(2)} photos/s (${uploads.photos_total} stored in ${info.duration_s} s), ` +
      `p50 ${e!.latency_p50_ms.toFixed(1)} ms, p99 ${e!.latency_p99_ms.toFixed(1)} ms, max ${e!.latency_max_ms.toFixed(1)} ms`,
  )
  if (memory) {
    console.log(
      `(e) service RSS: ${memory.rss_before_mib.toFixed(1)} MiB before, peak ${memory.rss_peak_mib.toFixed(1)} MiB (${memory.rss_peak_source}; ` +
        `sampled max ${memory.rss_peak_sampled_mib.toFixed(1)} MiB over ${memory.samples} samples every ${memory.sample_interval_ms} ms), ` +
        `${memory.rss_after_mib.toFixed(1)} MiB after; VmHWM ${memory.hwm_before_mib.toFixed(1)} → ${memory.hwm_after_mib.toFixed(1)} MiB`,
    )
  } else {
    console.log('(e) service RSS: not measured (/proc/<pid>/status is Linux only)')
  }
  if (e1 && e2) {
    console.log(
      `(e1)/(e2) catalogue reads, ${e1.connections} connections: alone p50 ${e1.latency_p50_ms.toFixed(1)} / p99 ${e1.latency_p99_ms.toFixed(1)} ms, ` +
        `during uploads p50 ${e2.latency_p50_ms.toFixed(1)} / p99 ${e2.latency_p99_ms.toFixed(1)} ms`,
    )
  }
}

export function writeReport(
  file: string,
  info: RunInfo,
  results: Results,
  uploads?: UploadFigures,
  webhooks?: WebhookFigures,
  interleaved: readonly InterleavedRatio[] = [],
  late: LateFigures = {},
): void {
  const { ratios, targets } = checkTargets(results, uploads, webhooks, interleaved, late)
  const report = {
    ...info,
    date: new Date().toISOString(),
    scenarios: results,
    ...(uploads ? { uploads } : {}),
    ...(webhooks ? { webhooks } : {}),
    ...(late.feedReplay ? { feed_replay: late.feedReplay } : {}),
    ...(late.feedImport ? { feed_import: late.feedImport } : {}),
    ...(late.cursorPages ? { cursor_pages: late.cursorPages } : {}),
    /** Each scenario's single run against its ceiling's single run. */
    ratios,
    interleaved,
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

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`
const percent = (share: number) => `${(share * 100).toFixed(1)}%`
const round = (value: number, digits: number) => Number(value.toFixed(digits))
