/** One scenario under load: autocannon's programmatic API with a fresh request every time. */
import autocannon from 'autocannon'
import type { CpuMeter, CpuShares } from './machine.js'
import type { BenchRequest } from './requests.js'

/** (e) is the photo uploads, (e1) and (e2) the catalogue reads alone and during them; (g) and (h) the map's searches and clusters; (j) pages by cursor (cursor.ts). */
export type ScenarioId = 'a' | 'a1' | 'b' | 'c' | 'd' | 'e' | 'e1' | 'e2' | 'g' | 'h' | 'j'

export interface Scenario {
  id: ScenarioId
  title: string
  /** Server to hit (the ceiling or the service). */
  baseUrl: string
  /** The next request; called by autocannon before each one it sends. */
  next: () => BenchRequest
}

export interface ScenarioResult {
  id: ScenarioId
  title: string
  connections: number
  /** Mean of the per-second samples, as autocannon reports it. */
  requests_per_second: number
  requests_total: number
  latency_avg_ms: number
  latency_p50_ms: number
  latency_p99_ms: number
  latency_max_ms: number
  non_2xx: number
  /** Connection errors and timeouts. */
  errors: number
  timeouts: number
  status_codes: Record<string, number>
  /** The first few non-2xx answers, to tell what went wrong without rerunning. */
  failure_samples: { status: number; body: string }[]
  /** Where the CPU went while it was measured (Linux). */
  cpu?: CpuShares
}

export interface LoadOptions {
  connections: number
  /** Seconds measured. */
  duration: number
  /** Seconds run first and thrown away: JIT, connection pools and caches warm up. */
  warmup: number
}

const FAILURE_SAMPLES = 5

export async function runScenario(scenario: Scenario, options: LoadOptions, meter?: CpuMeter): Promise<ScenarioResult> {
  process.stderr.write(`(${scenario.id}) ${scenario.title}: warm-up ${options.warmup} s, then ${options.duration} s… `)
  await warmUp(scenario, options.connections, options.warmup)
  const result = await measureCpu(meter, () => measure(scenario, options.connections, options.duration))
  process.stderr.write('done\n')
  return result
}

/** The scenario's figures with the CPU each process spent meanwhile, when a meter is given. */
export async function measureCpu(meter: CpuMeter | undefined, work: () => Promise<ScenarioResult>): Promise<ScenarioResult> {
  if (!meter) return work()
  const { result, cpu } = await meter.measure(work)
  return cpu ? { ...result, cpu } : result
}

/** Loads the scenario and throws the figures away. */
export async function warmUp(scenario: Scenario, connections: number, seconds: number): Promise<void> {
  await fire(scenario, connections, seconds, [])
}

/** Loads the scenario and returns its figures; two at once load the server together. */
export async function measure(scenario: Scenario, connections: number, seconds: number): Promise<ScenarioResult> {
  const failures: ScenarioResult['failure_samples'] = []
  const result = await fire(scenario, connections, seconds, failures)
  return {
    id: scenario.id,
    title: scenario.title,
    connections,
    requests_per_second: round(result.requests.average),
    requests_total: result.requests.total,
    latency_avg_ms: round(result.latency.average),
    latency_p50_ms: result.latency.p50,
    latency_p99_ms: result.latency.p99,
    latency_max_ms: result.latency.max,
    non_2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    status_codes: Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, stats.count ?? 0])),
    failure_samples: failures,
  }
}

function fire(scenario: Scenario, connections: number, seconds: number, failures: ScenarioResult['failure_samples']): Promise<autocannon.Result> {
  return autocannon({
    url: scenario.baseUrl,
    connections,
    duration: seconds,
    requests: [
      {
        // Called for every request, so each one gets a new path, key or body.
        setupRequest: (request) => {
          const next = scenario.next()
          return {
            ...request,
            method: next.method,
            path: next.path,
            headers: { ...request.headers, ...next.headers },
            ...(next.body === undefined ? {} : { body: next.body }),
          }
        },
        onResponse: (status, body) => {
          if ((status < 200 || status > 299) && failures.length < FAILURE_SAMPLES) failures.push({ status, body: String(body).slice(0, 500) })
        },
      },
    ],
  })
}

const round = (value: number) => Math.round(value * 100) / 100
