import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import { createServer, type AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { codeRoot, nodeArguments } from './code-tree.js'

/**
 * Processes of the service run as an operator runs them, each a child of the test process,
 * from the code the test itself runs (see `nodeArguments`).
 */
export interface ServiceProcess {
  readonly name: string
  readonly pid: number
  /** Settles when the process has exited, however it ended. */
  readonly exited: Promise<void>
  /** Whether it is still running. */
  alive(): boolean
  /** Its last lines of output, for failure messages. */
  recentOutput(): string
  /** Ends it at once (no cleanup of its own, as a crash or an OOM kill would) and waits for the exit. */
  kill(): Promise<void>
  /** Asks it to stop (SIGTERM) and waits; SIGKILL if it has not ended within `graceMs`. */
  stop(graceMs?: number): Promise<void>
  /** Freezes it (SIGSTOP), as a stalled process or a machine under pressure would; resolves once it is frozen. */
  pause(): Promise<void>
  /** Lets a frozen process go on (SIGCONT). */
  resume(): void
}

export interface ApiProcess extends ServiceProcess {
  /** Where it answers, `http://127.0.0.1:<port>`. */
  readonly baseUrl: string
}

/** How long a process may take to be ready: tsx compiles the sources first, slowly on a busy machine. */
const STARTUP_TIMEOUT_MS = 90_000
const KEPT_OUTPUT_LINES = 40
/** Every process started here and not yet exited, killed should the test process end first. */
const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

/**
 * Starts an API process (`src/server.ts --no-worker`) on a free loopback port and waits until
 * its /readyz answers 200. A port taken meanwhile by someone else (the port is free when
 * chosen, not reserved) is retried on another.
 */
export async function startApiProcess(name: string, env: Record<string, string>): Promise<ApiProcess> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    const baseUrl = `http://127.0.0.1:${port}`
    // No metrics listener unless the test asks for one: the fixed default port is one for the machine.
    const service = spawnService(name, [...nodeArguments('src/server'), '--no-worker'], { METRICS_PORT: '0', ...env, HOST: '127.0.0.1', PORT: String(port) })
    try {
      await waitUntil(service, () => answersReady(baseUrl), 'its /readyz to answer 200')
      return { ...service, baseUrl }
    } catch (error) {
      await service.kill()
      if (attempt < 3 && service.recentOutput().includes('EADDRINUSE')) continue
      throw error
    }
  }
}

/**
 * Starts a worker process (`src/worker/main.ts`) and waits until it has started its jobs. A
 * worker has no HTTP port, so its log line "worker started" (level info) says it is ready:
 * `env` should let info through (LOG_LEVEL=info; a worker logs little else there).
 */
export async function startWorkerProcess(name: string, env: Record<string, string>): Promise<ServiceProcess> {
  const service = spawnService(name, nodeArguments('src/worker/main'), env)
  try {
    await waitUntil(service, () => service.recentOutput().includes('"msg":"worker started"'), 'its "worker started" log line')
    return service
  } catch (error) {
    await service.kill()
    throw error
  }
}

function spawnService(name: string, args: string[], env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, args, {
    // Only what the test gives, plus PATH and HOME: the test's own DATABASE_URL, REDIS_URL or
    // LOG_LEVEL must not leak into the service's configuration.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: codeRoot,
  })
  running.add(child)
  const lines: string[] = []
  const keep = (chunk: Buffer) => {
    lines.push(
      ...chunk
        .toString('utf8')
        .split('\n')
        .filter((line) => line.trim() !== ''),
    )
    lines.splice(0, Math.max(0, lines.length - KEPT_OUTPUT_LINES))
  }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve()
    else child.once('exit', () => resolve())
  }).then(() => {
    running.delete(child)
  })
  const alive = () => child.exitCode === null && child.signalCode === null
  const service: ServiceProcess = {
    name,
    pid: child.pid ?? -1,
    exited,
    alive,
    recentOutput: () => lines.join('\n'),
    async kill() {
      if (alive()) child.kill('SIGKILL')
      await exited
    },
    async stop(graceMs = 15_000) {
      if (alive()) child.kill('SIGTERM')
      // A frozen process would hold the SIGTERM until it is let go.
      if (alive()) child.kill('SIGCONT')
      const ended = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)])
      if (!ended) await service.kill()
    },
    async pause() {
      child.kill('SIGSTOP')
      while (alive() && !(await isFrozen(service.pid))) await sleep(10)
    },
    resume() {
      if (alive()) child.kill('SIGCONT')
    },
  }
  return service
}

/** Whether the kernel shows the process stopped (state T); true where there is no /proc to ask. */
async function isFrozen(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T')
  } catch {
    return true
  }
}

/** Polls `ready` until it holds; fails at once if the process exits first, with its output. */
async function waitUntil(service: ServiceProcess, ready: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS
  while (!(await ready())) {
    if (!service.alive()) throw new Error(`${service.name} exited before ${what}:\n${service.recentOutput()}`)
    if (Date.now() > deadline) throw new Error(`${service.name} did not get to ${what} within ${STARTUP_TIMEOUT_MS} ms:\n${service.recentOutput()}`)
    await sleep(100)
  }
}

async function answersReady(baseUrl: string): Promise<boolean> {
  try {
    const response = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(5000) })
    await response.arrayBuffer()
    return response.status === 200
  } catch {
    return false
  }
}

/** A loopback port nobody listens on now (free when chosen, not reserved). */
export async function freePort(): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  await once(server, 'close')
  return port
}
