import { mkdir } from 'node:fs/promises'
import fastifyStatic from '@fastify/static'
import type { FastifyPluginAsync } from 'fastify'
import { ApiError } from '../../lib/errors.js'
import { MEDIA_CACHE_CONTROL, mediaRoot } from './storage.js'

/**
 * `/media/...`: the files of the `local` storage driver, public like the catalogue that
 * links them. A key is never reused for other bytes, so they are cached for a year; the type
 * follows the extension the service chose from the bytes, and nosniff stops a browser guessing.
 */
const mediaRoutes: FastifyPluginAsync = async (app) => {
  const root = mediaRoot(app.config)
  await mkdir(root, { recursive: true })
  // What the file server refuses is answered as the API answers: a path it will not serve (a
  // traversal) is as missing as any other, a 404 (403 would say something is there); a range
  // past the end keeps the Content-Range that tells the client the file's length.
  app.setErrorHandler((error: Error & { status?: number; headers?: Record<string, string> }, _request, reply) => {
    if (error.status === 403) return reply.callNotFound()
    if (error.status === 416 && error.headers?.['Content-Range']) void reply.header('content-range', error.headers['Content-Range'])
    throw error
  })
  // A file that is not there (a photo since deleted, a URL mistyped) is said to be missing, not
  // the route: /media/ is one. Not counted as a failure, as a scan for routes is.
  app.setNotFoundHandler(async (request) => {
    throw ApiError.notFound(`There is no file at ${request.url.split('?')[0]}: a deleted photo's files are removed with it.`)
  })
  await app.register(fastifyStatic, {
    root,
    prefix: '/',
    decorateReply: false,
    index: false,
    list: false,
    dotfiles: 'ignore',
    cacheControl: false,
    etag: true,
    lastModified: false,
    allowedPath: (pathName) => !pathName.endsWith('.partial'),
    setHeaders: (response) => {
      response.setHeader('cache-control', MEDIA_CACHE_CONTROL)
      response.setHeader('x-content-type-options', 'nosniff')
    },
    schemaHide: true,
  })
}

export default mediaRoutes
