/**
 * The servers under test run in child processes: autocannon in the same process would share
 * their event loop and measure itself as much as them.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { portOf } from './announce.js'
import { REPO_ROOT } from './options.js'

export interface Child {
  name: string
  url: string
  pid: number | undefined
  stop(): Promise<void>
}

const STARTUP_TIMEOUT_MS = 120_000
const STOP_TIMEOUT_MS = 10_000

/** Every child still running, so an interrupt can stop them all. */
const running = new Set<Child>()

/**
 * Starts `node --import tsx <script>` with the given environment and resolves once it has
 * announced its port. Its logs go to our stderr, prefixed with its name. Its stdin is a pipe
 * that it watches: if the bench dies, the pipe closes and the child closes too.
 */
export function startChild(name: string, script: string, env: NodeJS.ProcessEnv): Promise<Child> {
  // Node flags NODE_OPTIONS refuses, such as `--cpu-prof --cpu-prof-dir=DIR` to profile every server (docs/performance.md).
  const nodeFlags = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []
  const proc = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', script], {
    cwd: REPO_ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  // A profile's file is named after its process: this line tells the service's from the others'.
  if (nodeFlags.length > 0) process.stderr.write(`[${name}] pid ${proc.pid}\n`)
  const forward = (line: string) => process.stderr.write(`[${name}] ${line}\n`)
  createInterface({ input: proc.stderr }).on('line', forward)

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL')
      reject(new Error(`${name} did not start within ${STARTUP_TIMEOUT_MS / 1000} s`))
    }, STARTUP_TIMEOUT_MS)
    const onEarlyExit = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited before listening (${signal ?? `code ${code}`}); its output is above`))
    }
    proc.once('exit', onEarlyExit)

    let announced = false
    createInterface({ input: proc.stdout }).on('line', (line) => {
      const port = announced ? undefined : portOf(line)
      if (port === undefined) return forward(line)
      announced = true
      clearTimeout(timer)
      proc.off('exit', onEarlyExit)
      const child: Child = { name, url: `http://127.0.0.1:${port}`, pid: proc.pid, stop: () => stop(proc, child) }
      running.add(child)
      resolve(child)
    })
  })
}

export async function stopAllChildren(): Promise<void> {
  await Promise.all([...running].map((child) => child.stop()))
}

/** SIGTERM lets the child close its database cleanly; one that hangs is killed. */
async function stop(proc: ChildProcess, child: Child): Promise<void> {
  running.delete(child)
  if (proc.exitCode !== null || proc.signalCode !== null) return
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
  proc.kill('SIGTERM')
  const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_TIMEOUT_MS)
  await exited
  clearTimeout(timer)
}
