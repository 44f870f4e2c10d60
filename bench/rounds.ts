/**
 * A ratio to the ceiling taken from interleaved rounds: ceiling, scenario, ceiling, scenario…
 * Each round's ratio sets the scenario against the ceiling measured just before it, so a
 * machine that speeds up or slows down between rounds (a shared host, turbo, another program)
 * moves both sides of that round alike; the median of the rounds is the figure, and its spread
 * (min–max) says how far one sample could have been trusted.
 */
import type { CpuMeter } from './machine.js'
import { measure, measureCpu, type Scenario, type ScenarioId, type ScenarioResult } from './load.js'

export interface Round {
  ceiling: ScenarioResult
  scenario: ScenarioResult
  /** The scenario's req/s over the ceiling's, this round. */
  ratio: number
}

export interface InterleavedRatio {
  scenario: ScenarioId
  ceiling: ScenarioId
  seconds_per_run: number
  rounds: Round[]
  ratio_median: number
  ratio_min: number
  ratio_max: number
  /** The scenario's p99 latency, median and worst of the rounds, in ms. */
  p99_median_ms: number
  p99_max_ms: number
  /** Absolute figures, median of the rounds. */
  ceiling_rps_median: number
  scenario_rps_median: number
}

export async function interleavedRatio(
  ceiling: Scenario,
  scenario: Scenario,
  options: { rounds: number; seconds: number; connections: number },
  meter?: CpuMeter,
): Promise<InterleavedRatio> {
  const rounds: Round[] = []
  for (let round = 1; round <= options.rounds; round++) {
    process.stderr.write(`(${scenario.id})/(${ceiling.id}) round ${round} of ${options.rounds}: ${options.seconds} s each… `)
    const ceilingResult = await measureCpu(meter, () => measure(ceiling, options.connections, options.seconds))
    const scenarioResult = await measureCpu(meter, () => measure(scenario, options.connections, options.seconds))
    const ratio = round4(scenarioResult.requests_per_second / ceilingResult.requests_per_second)
    rounds.push({ ceiling: ceilingResult, scenario: scenarioResult, ratio })
    process.stderr.write(`${(ratio * 100).toFixed(1)}%\n`)
  }
  const ratios = rounds.map((round) => round.ratio)
  const p99s = rounds.map((round) => round.scenario.latency_p99_ms)
  return {
    scenario: scenario.id,
    ceiling: ceiling.id,
    seconds_per_run: options.seconds,
    rounds,
    ratio_median: median(ratios),
    ratio_min: Math.min(...ratios),
    ratio_max: Math.max(...ratios),
    p99_median_ms: median(p99s),
    p99_max_ms: Math.max(...p99s),
    ceiling_rps_median: median(rounds.map((round) => round.ceiling.requests_per_second)),
    scenario_rps_median: median(rounds.map((round) => round.scenario.requests_per_second)),
  }
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : round4((sorted[middle - 1]! + sorted[middle]!) / 2)
}

const round4 = (value: number) => Number(value.toFixed(4))
