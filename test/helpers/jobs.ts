import pino, { type Logger } from 'pino'
import type { Job, JobContext } from '../../src/worker/job.js'
import type { TestApp } from './app.js'

/** A log line as pino writes it. */
export interface LogLine {
  level: number
  msg: string
  [field: string]: unknown
}

/** A logger that keeps its lines for the test to read. */
export function capturedLog(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = []
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) })
  return { log, lines }
}

/** What the worker hands a job, on the test app's services. */
export function jobContext(t: TestApp, log: Logger = pino({ level: 'silent' })): JobContext {
  return { services: t.app.services, config: t.config, log, signal: new AbortController().signal }
}

/** Runs the job as the worker's loop does while it finds work (at most `runs` times); how much each run handled. */
export async function runWhileWorkRemains(job: Job, context: JobContext, runs = 100): Promise<number[]> {
  const handled: number[] = []
  for (let done = await job.runOnce(context); done > 0; done = await job.runOnce(context)) {
    handled.push(done)
    if (handled.length >= runs) throw new Error(`${job.name} still found work after ${runs} runs`)
  }
  return handled
}
