import { createHash, randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { asClause } from '../../lib/errors.js'
import { OutboundError, type OutboundClient } from '../../lib/outbound-http.js'

/** Redirects a feed's address may take: CRMs often serve the export behind one or two. */
const FEED_MAX_REDIRECTS = 5

/** Why a run failed as a whole: a stable code for programs and a sentence for people. */
export class FeedRunFailure extends Error {
  override name = 'FeedRunFailure'
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/** The validators a feed remembers from its last import, sent back so an unchanged file costs a 304. */
export interface FeedValidators {
  etag: string | null
  lastModified: string | null
  contentDigest: string | null
}

export type FeedDownload =
  | { changed: false }
  | {
      changed: true
      /** A temporary file holding the body; `discard()` removes it. */
      file: string
      digest: string
      bytes: number
      etag: string | null
      lastModified: string | null
      /** Reads the file again, as many times as the import needs. */
      read(): AsyncIterable<Buffer>
      discard(): Promise<void>
    }

export interface FeedDownloadLimits {
  maxBytes: number
  timeoutMs: number
  /** A redirect to plain http refused, as the feed's own URL must be https (without ALLOW_PRIVATE_NETWORK). */
  httpsOnly: boolean
  /** Stops the download at once: its run is no longer this worker's to carry out. */
  signal?: AbortSignal
}

const single = (value: string | string[] | undefined): string | null => (Array.isArray(value) ? (value[0] ?? null) : (value ?? null))

/**
 * Downloads a feed's file to a temporary file through the guarded client, hashing it on the
 * way: a 304, or the very bytes imported last time, is `changed: false`. Never holds the file
 * in memory, whatever its size. Fails with a FeedRunFailure saying why.
 */
export async function downloadFeed(outbound: OutboundClient, url: string, known: FeedValidators, limits: FeedDownloadLimits): Promise<FeedDownload> {
  const headers: Record<string, string> = { accept: 'application/xml, text/xml;q=0.9, */*;q=0.1' }
  if (known.contentDigest !== null) {
    // Only after an import: the validators describe the file that was imported.
    if (known.etag) headers['if-none-match'] = known.etag
    if (known.lastModified) headers['if-modified-since'] = known.lastModified
  }
  const file = path.join(tmpdir(), `mls-feed-${randomBytes(8).toString('hex')}.xml`)
  const discard = () => rm(file, { force: true })
  try {
    const response = await outbound.stream({
      url,
      headers,
      timeoutMs: limits.timeoutMs,
      maxBodyBytes: limits.maxBytes,
      maxRedirects: FEED_MAX_REDIRECTS,
      httpsOnly: limits.httpsOnly,
      ...(limits.signal ? { signal: limits.signal } : {}),
    })
    if (response.status === 304) {
      await drain(response.body)
      return { changed: false }
    }
    if (response.status < 200 || response.status > 299) {
      await drain(response.body)
      throw new FeedRunFailure('http_status', `The feed’s address answered HTTP ${response.status}, not the file.`)
    }
    const hash = createHash('sha256')
    let bytes = 0
    await pipeline(
      Readable.from(response.body),
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          hash.update(chunk)
          bytes += chunk.length
          yield chunk
        }
      },
      createWriteStream(file),
    )
    const digest = hash.digest('hex')
    if (digest === known.contentDigest) {
      await discard()
      return { changed: false }
    }
    return {
      changed: true,
      file,
      digest,
      bytes,
      etag: single(response.headers.etag),
      lastModified: single(response.headers['last-modified']),
      read: () => createReadStream(file, { highWaterMark: 256 * 1024 }),
      discard,
    }
  } catch (error) {
    await discard()
    if (error instanceof OutboundError) {
      throw new FeedRunFailure(error.kind === 'too_large' ? 'too_large' : 'download_failed', `The feed could not be downloaded: ${asClause(error.message)}.`)
    }
    throw error
  }
}

async function drain(body: AsyncIterable<Buffer>): Promise<void> {
  for await (const _ of body) break
}
