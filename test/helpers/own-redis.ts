import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { Redis } from 'ioredis'
import { waitFor } from './webhooks.js'

/** Whether redis-server is installed, to start a throwaway one (a test that needs one is skipped otherwise). */
export function hasRedisServer(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/**
 * A throwaway redis-server of the test's own (never the machine's 6379), ready to answer;
 * with `password`, one that wants it.
 */
export async function startOwnRedis(port: number, password?: string): Promise<ChildProcess> {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...(password ? ['--requirepass', password] : [])]
  const server = spawn('redis-server', args, { stdio: 'ignore' })
  await waitFor(
    async () => {
      const probe = new Redis(port, { host: '127.0.0.1', password, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 })
      probe.on('error', () => {})
      try {
        await probe.connect()
        return (await probe.ping()) === 'PONG'
      } catch {
        return false
      } finally {
        probe.disconnect()
      }
    },
    10_000,
    'the throwaway redis-server',
  )
  return server
}

/** Ends a throwaway redis-server, a frozen one (SIGSTOP) too. */
export async function stopOwnRedis(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return
  server.kill('SIGCONT')
  server.kill('SIGKILL')
  await once(server, 'exit')
}
