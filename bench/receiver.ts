/**
 * The webhook receiver of scenario (f), as a child process of the bench, so that its work is
 * neither counted as the bench's nor slowed by it, and its CPU time can be told apart. It
 * answers every delivery 204 at once, as a fast receiver does, and keeps what the bench asks
 * for on its control paths:
 *   GET /control/start   starts measuring (latencies, CPU time), afresh;
 *   GET /control/stop    stops, and answers the latencies from each event's time to its arrival, and the CPU time spent;
 *   GET /control/counts  answers the deliveries received, distinct and repeated (a webhook-id a path already had).
 */
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { announce, closeWithParent } from './announce.js'

let measuring = false
let latencies: number[] = []
let cpuAtStart = process.cpuUsage()
let startedAt = performance.now()
const seen = new Set<string>()
let repeats = 0

const server = createServer((request, response) => {
  if (request.url?.startsWith('/control/')) return control(request.url, response)
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    response.writeHead(204).end()
    // Each subscriber has its own path, so one webhook-id reaching several is no repeat.
    const id = `${String(request.headers['webhook-id'])} ${request.url}`
    if (seen.has(id)) repeats++
    seen.add(id)
    if (!measuring) return
    const { timestamp } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { timestamp: string }
    latencies.push(Date.now() - Date.parse(timestamp))
  })
})

function control(url: string, response: ServerResponse): void {
  let answer: unknown = {}
  if (url === '/control/start') {
    latencies = []
    measuring = true
    cpuAtStart = process.cpuUsage()
    startedAt = performance.now()
  } else if (url === '/control/stop') {
    measuring = false
    const cpu = process.cpuUsage(cpuAtStart)
    answer = { latencies, cpu_ms: (cpu.user + cpu.system) / 1000, wall_ms: performance.now() - startedAt }
  } else if (url === '/control/counts') {
    answer = { distinct: seen.size, repeats }
  }
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer))
}

server.keepAliveTimeout = 30_000
server.listen(0, '127.0.0.1', () => announce((server.address() as AddressInfo).port))

closeWithParent(async () => {
  server.closeAllConnections()
  server.close()
})
