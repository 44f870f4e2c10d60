import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { buildTestApp } from '../helpers/app.js'
import { registrationBody } from '../helpers/factories.js'
import { waitFor } from '../helpers/webhooks.js'

/**
 * While the service shuts down (docs/operations.md, graceful shutdown), the requests in flight
 * are answered, and a request arriving behind one on its kept-alive connection, as a load
 * balancer's pooled connections send them, gets a 503 like any other error of the service
 * (docs/api.md): a detail, Retry-After, its X-Request-Id and the browser policy's headers.
 */
/**
 * The answers on one kept-alive connection while the service closes: a registration in flight
 * when the shutdown begins, then `next`, sent behind it once the service stopped listening.
 */
async function answersWhileClosing(next: string): Promise<string[]> {
  const t = await buildTestApp()
  await t.app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = t.app.server.address() as AddressInfo
  let requests = 0
  t.app.server.on('request', () => requests++)
  const socket = connect(port, '127.0.0.1')
  let received = ''
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')))
  socket.on('error', () => {})
  const ended = once(socket, 'close')

  // A request in flight: its headers read, its body still arriving when the shutdown begins.
  const body = Buffer.from(JSON.stringify(registrationBody()))
  socket.write(`POST /tenants/register HTTP/1.1\r\nHost: mls.test\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`)
  socket.write(body.subarray(0, 10))
  await waitFor(() => requests === 1, 10_000, 'the first request to be read')
  const closing = t.close()
  await waitFor(() => !t.app.server.listening, 10_000, 'the service to stop listening')
  // The rest of the body, and the next request on the same connection.
  socket.write(Buffer.concat([body.subarray(10), Buffer.from(next)]))
  await closing
  await ended
  return received.split(/(?=HTTP\/1\.1 \d{3} )/)
}

describe('a request arriving while the service closes', () => {
  it('is a 503 in the service’s own shape, and the request in flight is answered', async () => {
    const answers = await answersWhileClosing('GET /healthz HTTP/1.1\r\nHost: mls.test\r\nX-Request-Id: second-request\r\n\r\n')
    assert.equal(answers.length, 2, answers.join(''))
    const [first, second] = answers as [string, string]
    assert.match(first, /^HTTP\/1\.1 201 /, 'the request in flight is answered')
    const [head, text] = second.split('\r\n\r\n') as [string, string]
    assert.match(head, /^HTTP\/1\.1 503 /)
    assert.equal((JSON.parse(text) as { detail: string }).detail, 'The service is shutting down; retry on another instance or shortly.')
    assert.match(head, /\r\nx-request-id: second-request(\r\n|$)/i)
    assert.match(head, /\r\nretry-after: 5(\r\n|$)/i)
    assert.match(head, /\r\nx-content-type-options: nosniff(\r\n|$)/i)
    assert.match(head, /\r\nconnection: close(\r\n|$)/i)
  })

  // docs/operations.md, Health: /readyz answers `503 {"status":"not_ready","detail":"…"}`
  // whenever it is not ready: a load balancer's probe on a kept-alive connection, behind a
  // request in flight while the process closes, too.
  it('answers /readyz with 503 {"status":"not_ready","detail":…}', async () => {
    const answers = await answersWhileClosing('GET /readyz HTTP/1.1\r\nHost: mls.test\r\n\r\n')
    assert.equal(answers.length, 2, answers.join(''))
    const [head, text] = answers[1]!.split('\r\n\r\n') as [string, string]
    assert.match(head, /^HTTP\/1\.1 503 /)
    const answer = JSON.parse(text) as { status?: string; detail?: string }
    assert.equal(answer.status, 'not_ready', text)
    assert.equal(typeof answer.detail, 'string')
  })
})
