import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { propertyBody } from './factories.js'

export type RequestKind = 'read' | 'submission'

/** One request of a load and how it ended; times are `performance.now()` milliseconds. */
export interface Outcome {
  kind: RequestKind
  startedAt: number
  endedAt: number
  /** The HTTP status; undefined when no answer came (a reset or refused connection, a timeout). */
  status: number | undefined
  retryAfter: string | null
  /** The `detail` of an error body. */
  detail: string | undefined
  /** The property a 201 created. */
  createdId: number | undefined
  /** Why no answer came. */
  failure: string | undefined
}

export interface LoadOptions {
  baseUrl: string
  apiKey: string
  /** Paths of catalogue reads, taken in turn. */
  readPaths: readonly string[]
  readers: number
  submitters: number
}

export interface Load {
  /** Every request answered (or not) so far, in the order they ended. */
  outcomes: Outcome[]
  /** Lets each loop finish the request in hand, then stop. */
  stop(): Promise<void>
}

/** Keeps a loop from spinning on instant 503s: load, not a flood that starves the event loop. */
const PAUSE_BETWEEN_REQUESTS_MS = 5
/** A request never answered within this is recorded as a failure, rather than hanging the test. */
const REQUEST_LIMIT_MS = 60_000

/**
 * Catalogue reads and submissions (POST /properties) through real HTTP, each loop sending its
 * next request as soon as the last one ended, until stopped.
 */
export function startLoad({ baseUrl, apiKey, readPaths, readers, submitters }: LoadOptions): Load {
  const outcomes: Outcome[] = []
  let stopped = false
  let reads = 0
  const loop = async (next: () => Promise<Outcome>) => {
    while (!stopped) {
      outcomes.push(await next())
      await sleep(PAUSE_BETWEEN_REQUESTS_MS)
    }
  }
  const read = () => send('read', `${baseUrl}${readPaths[reads++ % readPaths.length]}`, { method: 'GET' })
  const submit = () =>
    send('submission', `${baseUrl}/properties`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify(propertyBody()),
    })
  const loops = [...Array.from({ length: readers }, () => loop(read)), ...Array.from({ length: submitters }, () => loop(submit))]
  return {
    outcomes,
    async stop() {
      stopped = true
      await Promise.all(loops)
    },
  }
}

async function send(kind: RequestKind, url: string, init: RequestInit): Promise<Outcome> {
  const startedAt = performance.now()
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_LIMIT_MS) })
    const text = await response.text()
    const endedAt = performance.now()
    const base = { kind, startedAt, endedAt, status: response.status, retryAfter: response.headers.get('retry-after'), failure: undefined }
    if (response.status === 201) return { ...base, detail: undefined, createdId: (JSON.parse(text) as Property).id }
    if (response.ok) return { ...base, detail: undefined, createdId: undefined }
    return { ...base, detail: errorDetail(text), createdId: undefined }
  } catch (error) {
    return {
      kind,
      startedAt,
      endedAt: performance.now(),
      status: undefined,
      retryAfter: null,
      detail: undefined,
      createdId: undefined,
      failure: describeFailure(error),
    }
  }
}

function errorDetail(text: string): string | undefined {
  try {
    return (JSON.parse(text) as { detail?: string }).detail
  } catch {
    return `not JSON: ${text.slice(0, 200)}`
  }
}

/** fetch() says only "fetch failed"; what happened (ECONNRESET, a timeout) is on its cause. */
function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause instanceof Error ? `: ${(error.cause as NodeJS.ErrnoException).code ?? error.cause.message}` : ''
  return `${error.name} ${error.message}${cause}`
}
