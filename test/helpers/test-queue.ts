/**
 * `npm test` runs the test files in a few long-lived processes rather than one process per
 * file: each process takes the next file from a queue the build wrote, runs it as a suite named
 * after it, and takes another until none is left. Loading the app, the engine's WebAssembly and
 * the code's warm-up are paid once per process instead of once per file, a fifth or more of the
 * suite's CPU. The files share nothing but the process: each builds its own app on its own
 * database, as it does when run alone. A test that reads its own process's memory collects the
 * garbage first (test/feeds/feed-reader.test.ts): other files' garbage is in the same heap.
 *
 * A file is claimed by creating its marker in the queue's folder (`wx` fails for every process
 * but the first), so each runs exactly once whichever process gets there first. The queue lists
 * the files longest first by their last recorded durations, so that the processes finish together.
 */
import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe } from 'node:test'
import { pathToFileURL } from 'node:url'

/** What the build writes for the processes: the files in the order they are to be taken. */
export interface TestQueue {
  files: string[]
  claims: string
  durations: string
}

export async function runQueuedTestFiles(queueFile: string): Promise<void> {
  const queue = JSON.parse(readFileSync(queueFile, 'utf8')) as TestQueue
  const root = path.dirname(queueFile)
  for (const [index, file] of queue.files.entries()) {
    if (!claim(queue.claims, index)) continue
    const started = performance.now()
    await describe(file, async () => {
      await import(pathToFileURL(path.join(root, file)).href)
    })
    recordDuration(queue.durations, file, performance.now() - started)
  }
}

function claim(folder: string, index: number): boolean {
  try {
    closeSync(openSync(path.join(folder, String(index)), 'wx'))
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  }
}

/** One line per file run, appended (a short append is atomic): the build keeps the last of each. */
function recordDuration(durationsFile: string, file: string, ms: number): void {
  mkdirSync(path.dirname(durationsFile), { recursive: true })
  appendFileSync(durationsFile, `${JSON.stringify({ file, ms: Math.round(ms) })}\n`)
}
