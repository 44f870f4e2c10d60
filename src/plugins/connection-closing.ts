import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'

/** How long, at most, the rest of a body is read and thrown away once it has been answered. */
const LINGER_MS = 5000
/** How much of it, at most: a client sending more has not read the answer, and is cut off. */
const LINGER_MAX_BYTES = 32 * 1024 * 1024

/**
 * When a connection closes, so that every request on it is answered:
 *
 * - A client may close its sending side once its request is sent (`nc`, some proxies and health
 *   checks do); that does not delimit the request nor mean it wants no answer (RFC 9112, 9.6).
 *   Node's HTTP server would end the connection at once, losing the answer being prepared.
 *   With httpAllowHalfOpen, it ends it once the answer is written.
 *
 * - An answer can go out before the request's body has all arrived: a 413 on the Content-Length
 *   alone, a photo refused once it passes the limit, a 401 before an upload. Such an answer
 *   closes the connection (`Connection: close`: the client may stop sending). Node would then
 *   close the socket as soon as the answer is written, while the client is still sending; the
 *   bytes arriving at a closed socket make the kernel reset the connection, and a client that
 *   has not yet read the answer loses it (EPIPE or ECONNRESET instead of the 413). So the close
 *   lingers, as web servers' do: the sending side is closed once the answer is out, and the
 *   rest of the body is read and discarded until the client closes its side, for at most
 *   LINGER_MS and LINGER_MAX_BYTES; then the socket is destroyed.
 */
export function installConnectionClosing(app: FastifyInstance): void {
  // Not among Node's documented options: its HTTP server reads it when a client closes its side
  // (socketOnEnd in lib/_http_server.js). The test of half-closed requests guards it.
  const server = app.server as typeof app.server & { httpAllowHalfOpen?: boolean }
  server.httpAllowHalfOpen = true
  app.addHook('onSend', async (request, reply) => {
    const { raw } = request
    // `complete` is false only on a real socket whose request is still arriving (never under inject).
    if (raw.complete !== false || raw.socket.destroyed) return
    reply.header('connection', 'close')
    lingerOnClose(raw, raw.socket)
  })
}

function lingerOnClose(request: IncomingMessage, socket: Socket): void {
  answered.add(socket)
  // Whatever was reading the body (a multipart parser) stops; from now on it is thrown away.
  request.unpipe()
  request.removeAllListeners('data')
  request.resume()
  // Node ends a `Connection: close` exchange with destroySoon() once the answer is written;
  // this one lingers instead.
  socket.destroySoon = () => closeLingering(socket)
}

/** Sockets whose last answer is written or on its way: all that is left is to close them. */
const answered = new WeakSet<Socket>()
/** Sockets closing lingering already: once is enough. */
const lingering = new WeakSet<Socket>()

/** Whether `socket` has had its last answer and is closing (see closeLingering). */
export function isAnsweredAndClosing(socket: Socket): boolean {
  return answered.has(socket)
}

/**
 * Closes the sending side of `socket` once what was written to it is out, and destroys it when
 * the client closes its side or after LINGER_MS or LINGER_MAX_BYTES more, whichever comes
 * first. What arrives meanwhile is read and thrown away, so the client reads what it was sent
 * instead of a reset.
 */
export function closeLingering(socket: Socket): void {
  answered.add(socket)
  if (lingering.has(socket)) return
  lingering.add(socket)
  socket.end()
  let received = 0
  const cutOff = setTimeout(() => socket.destroy(), LINGER_MS)
  socket.on('data', (chunk: Buffer) => {
    received += chunk.length
    if (received > LINGER_MAX_BYTES) socket.destroy()
  })
  socket.once('end', () => socket.destroy())
  socket.once('close', () => clearTimeout(cutOff))
}
