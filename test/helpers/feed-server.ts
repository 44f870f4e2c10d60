import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGzip } from 'node:zlib'

/** What the server answers at a path: a body (whole, or produced in chunks as it is sent), and how. */
export interface ServedFile {
  body: string | Buffer | (() => AsyncIterable<string | Buffer>)
  contentType?: string
  status?: number
  /** Sent as ETag; a request whose If-None-Match names it is answered 304. */
  etag?: string
  lastModified?: string
  /** Sent gzipped (Content-Encoding: gzip) when the client accepts it. */
  gzip?: boolean
  headers?: Record<string, string>
  /** Sends this many bytes of the body, then drops the connection. */
  cutAfterBytes?: number
}

export interface FeedServer {
  /** An address on the server, for `path`. */
  url(path: string): string
  serve(path: string, file: ServedFile): void
  /** Every request, in order: path and headers. */
  requests: { path: string; headers: IncomingHttpHeaders }[]
  close(): Promise<void>
}

/** A local HTTP server for feeds and their photos (tests run with ALLOW_PRIVATE_NETWORK). */
export async function startFeedServer(): Promise<FeedServer> {
  const files = new Map<string, ServedFile>()
  const requests: FeedServer['requests'] = []
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname
    requests.push({ path, headers: request.headers })
    const file = files.get(path)
    if (!file) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not here')
      return
    }
    if (file.etag !== undefined && request.headers['if-none-match'] === file.etag) {
      response.writeHead(304, { etag: file.etag }).end()
      return
    }
    const gzip = file.gzip === true && /gzip/.test(String(request.headers['accept-encoding'] ?? ''))
    response.writeHead(file.status ?? 200, {
      'content-type': file.contentType ?? 'application/xml; charset=utf-8',
      ...(file.etag === undefined ? {} : { etag: file.etag }),
      ...(file.lastModified === undefined ? {} : { 'last-modified': file.lastModified }),
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      ...file.headers,
    })
    const source = typeof file.body === 'function' ? Readable.from(file.body()) : Readable.from([file.body])
    if (file.cutAfterBytes !== undefined) {
      const cut = file.cutAfterBytes
      void (async () => {
        let sent = 0
        for await (const chunk of source) {
          const bytes = Buffer.from(chunk as string | Buffer)
          response.write(bytes.subarray(0, Math.max(0, cut - sent)))
          sent += bytes.length
          if (sent >= cut) break
        }
        response.socket?.destroy()
      })()
      return
    }
    void pipeline(gzip ? [source, createGzip(), response] : [source, response]).catch(() => response.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    serve: (path, file) => void files.set(path, file),
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
