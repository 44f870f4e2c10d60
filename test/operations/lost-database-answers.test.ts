import assert from 'node:assert/strict'
import net from 'node:net'
import { execFileSync } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { UNANSWERED_STATEMENT_GRACE_MS } from '../../src/db/client.js'
import { engine } from '../helpers/database.js'
import { adminHeaders, createTenant, propertyBody } from '../helpers/factories.js'
import { startLiveService, type LiveService } from '../helpers/live-service.js'
import { multipartBody, photo } from '../helpers/photos.js'
import { createPrivateCluster, postgresBinaries, type PrivateCluster } from '../helpers/private-cluster.js'
import { waitFor } from '../helpers/webhooks.js'

/**
 * The database's answers lost or late, on a throwaway cluster of this test's own: a COMMIT's
 * answer lost on the way, a server that stops answering, a network that drops packets and then
 * heals. Whatever a request answers then, nothing is left half-written, no request hangs past
 * the time limit on a statement, and the service serves again once the database does.
 */
const binaries = postgresBinaries()
const skip = engine === 'pglite' ? 'needs PostgreSQL (DATABASE_URL)' : 'missing' in binaries ? binaries.missing : false

/**
 * The services here give a catalogue statement 2 s rather than 30, so that a statement goes
 * unanswered for long enough to be given up (7 s) in a few seconds of the test's time.
 */
const statementTimeoutMs = 2000
const unansweredMs = statementTimeoutMs + UNANSWERED_STATEMENT_GRACE_MS
const startService = (serverUrl: string) =>
  startLiveService({ ALLOW_PRIVATE_NETWORK: 'true', DATABASE_STATEMENT_TIMEOUT_MS: String(statementTimeoutMs) }, { serverUrl })

/**
 * A TCP proxy in front of PostgreSQL that can lose one COMMIT's answer: the server gets the
 * COMMIT (and commits), the client's connection is cut before the answer reaches it, as a
 * network cut or a failover at that moment would. Armed with a pattern, it cuts the first
 * connection that sent a statement matching it and then a COMMIT.
 */
async function startCommitCuttingProxy(targetUrl: string) {
  const target = new URL(targetUrl)
  let armed: RegExp | undefined
  let cuts = 0
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname)
    sockets.add(client).add(upstream)
    let sawPattern = false
    let cutting = false
    const end = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
    client.on('data', (chunk: Buffer) => {
      if (cutting) return
      const text = chunk.toString('latin1')
      if (armed?.test(text)) sawPattern = true
      if (armed && sawPattern && /\bcommit\b/i.test(text)) {
        cutting = true
        armed = undefined
        cuts++
        // The server's answer to the COMMIT says it committed: it is dropped, and the client cut off.
        upstream.once('data', end)
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (!cutting) client.write(chunk)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(targetUrl)
  url.port = String((server.address() as net.AddressInfo).port)
  return {
    url: url.toString(),
    arm(pattern: RegExp) {
      armed = pattern
    },
    get cuts() {
      return cuts
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe('a connection lost while its COMMIT is answered', { skip }, () => {
  let cluster: PrivateCluster
  let proxy: Awaited<ReturnType<typeof startCommitCuttingProxy>>
  let service: LiveService

  before(async () => {
    if (!('bin' in binaries)) return
    cluster = await createPrivateCluster(binaries.bin)
    proxy = await startCommitCuttingProxy(cluster.url)
    service = await startService(proxy.url)
  })

  after(async () => {
    await service?.close().catch(() => undefined)
    await proxy?.close()
    await cluster?.destroy()
  })

  it('never leaves a photo row without its file: an upload whose commit may have happened keeps its files', async () => {
    const tenant = await createTenant(service.app)
    const created = await service.app.inject({ method: 'POST', url: '/properties', headers: tenant.headers, payload: propertyBody() })
    assert.equal(created.statusCode, 201, created.body)
    const propertyId = created.json<{ id: number }>().id
    const form = await multipartBody({ file: await photo('jpeg'), fields: { property_id: String(propertyId) } })
    proxy.arm(/insert into "property_images"/i)
    const response = await fetch(`${service.baseUrl}/property-images/upload`, {
      method: 'POST',
      headers: { ...tenant.headers, 'content-type': form.contentType },
      body: form.payload,
    })
    const answer = await response.text()
    assert.equal(proxy.cuts, 1, 'the COMMIT of the photo row was cut')
    // Whatever the answer (a 503 is fair: the service cannot know), the photo is whole or absent.
    await waitFor(async () => (await fetch(`${service.baseUrl}/readyz`)).status === 200, 60_000, 'readyz')
    const listed = await fetch(`${service.baseUrl}/property-images?property_id=${propertyId}`, { headers: tenant.headers })
    assert.equal(listed.status, 200)
    const photos = (await listed.json()) as { id: number; url: string }[] | { items: { id: number; url: string }[] }
    const rows = Array.isArray(photos) ? photos : photos.items
    const broken: { id: number; url: string; status: number }[] = []
    for (const row of rows) {
      const file = await fetch(`${service.baseUrl}${new URL(row.url).pathname}`)
      await file.arrayBuffer()
      if (file.status !== 200) broken.push({ ...row, status: file.status })
    }
    assert.deepEqual(broken, [], `upload answered ${response.status} ${answer}; photo rows whose file is gone`)
  })
})

/** The processes of a private cluster (its postmaster, found by its port, and the postmaster's children). */
function clusterProcesses(url: string): number[] {
  const port = new URL(url).port
  const listening = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' })
  const postmaster = Number(/pid=(\d+)/.exec(listening)?.[1])
  assert.ok(postmaster > 0, `the postmaster on port ${port}: ${listening}`)
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((pid) => pid > 0)
  return [postmaster, ...children]
}

describe('a database that stops answering (frozen, as a network partition or a stalled host)', { skip }, () => {
  it(
    'answers requests with 503 {detail} and Retry-After: 5 (no 500, no hang) while the database stops answering, within seconds of the limit on a statement',
    { timeout: 5 * 60_000 },
    async () => {
      if (!('bin' in binaries)) return
      const cluster = await createPrivateCluster(binaries.bin)
      let service: LiveService | undefined
      let frozen: number[] = []
      try {
        service = await startService(cluster.url)
        const tenant = await createTenant(service.app)
        const submit = () =>
          fetch(`${service!.baseUrl}/properties`, {
            method: 'POST',
            headers: { ...tenant.headers, 'content-type': 'application/json' },
            body: JSON.stringify(propertyBody()),
            signal: AbortSignal.timeout(60_000),
          })
        // The pool's connections open and idle, the key cached: as in a service that has been running.
        for (let i = 0; i < 3; i++) assert.equal((await submit()).status, 201)
        frozen = clusterProcesses(cluster.url)
        for (const pid of frozen) process.kill(pid, 'SIGSTOP')
        const startedAt = Date.now()
        const timed = async (what: string, request: () => Promise<Response>) => {
          try {
            const response = await request()
            return { what, status: response.status, body: await response.text(), retryAfter: response.headers.get('retry-after'), ms: Date.now() - startedAt }
          } catch (error) {
            return { what, status: 0, body: `no answer (${(error as Error).name})`, retryAfter: null, ms: Date.now() - startedAt }
          }
        }
        const answers = await Promise.all([
          timed('submission', submit),
          timed('catalogue search', () => fetch(`${service!.baseUrl}/mls/properties?limit=7&sort=price_desc`, { signal: AbortSignal.timeout(60_000) })),
          timed('own listings', () => fetch(`${service!.baseUrl}/properties?limit=3`, { headers: tenant.headers, signal: AbortSignal.timeout(60_000) })),
          timed('webhooks', () => fetch(`${service!.baseUrl}/webhooks`, { headers: tenant.headers, signal: AbortSignal.timeout(60_000) })),
          timed('operator queue', () =>
            fetch(`${service!.baseUrl}/admin/properties?status_id=1`, { headers: adminHeaders, signal: AbortSignal.timeout(60_000) }),
          ),
        ])
        assert.deepEqual(
          answers.filter((answer) => answer.status !== 503 || answer.ms > unansweredMs + 10_000 || answer.retryAfter !== '5'),
          [],
          `every request answered 503 with Retry-After: 5 within ${unansweredMs + 10_000} ms`,
        )
      } finally {
        for (const pid of frozen) {
          try {
            process.kill(pid, 'SIGCONT')
          } catch {
            // Gone already.
          }
        }
        await service?.close().catch(() => undefined)
        await cluster.destroy()
      }
    },
  )
})

/**
 * A TCP proxy in front of PostgreSQL that can cut the network the way a partition does: packets
 * vanish, no side hears of it. Connections open during the partition stay dead after it heals
 * (their server side gone, as after a failover or a restart behind the partition), while new
 * connections go through again.
 */
async function startPartitionProxy(targetUrl: string) {
  const target = new URL(targetUrl)
  let partitioned = false
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket; dead: boolean }>()
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname)
    const pair = { client, upstream, dead: partitioned }
    pairs.add(pair)
    client.on('error', () => undefined)
    upstream.on('error', () => undefined)
    client.on('close', () => {
      upstream.destroy()
      pairs.delete(pair)
    })
    upstream.on('close', () => {
      if (!pair.dead) client.destroy()
    })
    client.on('data', (chunk: Buffer) => {
      if (!pair.dead) upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (!pair.dead) client.write(chunk)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(targetUrl)
  url.port = String((server.address() as net.AddressInfo).port)
  return {
    url: url.toString(),
    partition() {
      partitioned = true
      for (const pair of pairs) {
        pair.dead = true
        pair.upstream.destroy()
      }
    },
    heal() {
      partitioned = false
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy()
        pair.upstream.destroy()
      }
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe('a network partition between the service and its database, then healed', { skip }, () => {
  it('serves agency requests again within 60 s of the network healing, without a restart', { timeout: 3 * 60_000 }, async () => {
    if (!('bin' in binaries)) return
    const cluster = await createPrivateCluster(binaries.bin)
    const proxy = await startPartitionProxy(cluster.url)
    let service: LiveService | undefined
    try {
      service = await startService(proxy.url)
      const tenant = await createTenant(service.app)
      const ownListings = (timeoutMs: number) =>
        fetch(`${service!.baseUrl}/properties?limit=3`, { headers: tenant.headers, signal: AbortSignal.timeout(timeoutMs) }).then(
          async (response) => ({ status: response.status, body: await response.text() }),
          (error: unknown) => ({ status: 0, body: `no answer (${(error as Error).name})` }),
        )
      assert.equal((await ownListings(10_000)).status, 200)
      proxy.partition()
      // Requests caught by the partition: what they answer is not judged here.
      const caught = Array.from({ length: 8 }, () => ownListings(120_000))
      await new Promise((resolve) => setImmediate(resolve))
      const caughtSent = Date.now()
      await waitFor(() => Date.now() - caughtSent > 3000 || service!.database.handle.availability.isDown, 10_000, 'the requests to be under way')
      proxy.heal()
      const healedAt = Date.now()
      let last = { status: 0, body: '' }
      try {
        await waitFor(
          async () => {
            last = await ownListings(5000)
            return last.status === 200
          },
          60_000,
          'GET /properties to answer 200 again',
        )
      } catch {
        assert.fail(`60 s after the network healed, GET /properties still answers ${last.status} ${last.body}`)
      }
      const recoveredMs = Date.now() - healedAt
      assert.ok(recoveredMs <= 60_000, `recovered after ${recoveredMs} ms`)
      void Promise.all(caught)
    } finally {
      // The proxy's sockets first: the service's stuck connections then fail, and it can close.
      await proxy.close()
      await service?.close().catch(() => undefined)
      await cluster.destroy()
    }
  })
})
