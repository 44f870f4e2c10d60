import { execFile, execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { constants, tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { freePort } from './service-process.js'

const run = promisify(execFile)

const POSTGRES_LIB = '/usr/lib/postgresql'
const RUNUSER = '/usr/sbin/runuser'
/** The user the cluster runs as: PostgreSQL refuses to run as root, which tests are. */
const CLUSTER_USER = 'postgres'
/** Generous: initdb, start-up and crash recovery are slow on a busy machine. */
const PG_CTL_WAIT_S = '120'

/**
 * The directory of the machine's PostgreSQL binaries (the newest version installed), or why a
 * private cluster cannot be made here.
 */
export function postgresBinaries(): { bin: string } | { missing: string } {
  if (process.getuid?.() !== 0) return { missing: 'a private cluster is started with runuser, which needs root' }
  if (!existsSync(RUNUSER)) return { missing: `${RUNUSER} is not installed` }
  const versions = existsSync(POSTGRES_LIB) ? readdirSync(POSTGRES_LIB).filter((version) => existsSync(path.join(POSTGRES_LIB, version, 'bin', 'pg_ctl'))) : []
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]
  if (newest === undefined) return { missing: `no PostgreSQL binaries (initdb, pg_ctl) under ${POSTGRES_LIB}` }
  return { bin: path.join(POSTGRES_LIB, newest, 'bin') }
}

export interface PrivateCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`: trust authentication, loopback only. */
  url: string
  /** Starts the server and resolves once it accepts connections. */
  start(): Promise<void>
  /** Stops the server the way a crash would (`-m immediate`): no checkpoint, connections cut. */
  crash(): Promise<void>
  /** Stops the server if it runs and removes every file of the cluster. Never throws. */
  destroy(): Promise<void>
}

/** Folders of clusters not destroyed yet, and how to stop each, should the process end first. */
const undestroyed = new Map<string, () => void>()
let stopsOnExit = false

/**
 * A test cancelled by the runner (a timeout, an event loop that ran dry) never reaches its
 * `finally`: its cluster is stopped and removed when the process exits instead.
 */
function stopOnExit(folder: string, stopNow: () => void): void {
  undestroyed.set(folder, stopNow)
  if (stopsOnExit) return
  stopsOnExit = true
  process.on('exit', () => {
    for (const [left, stop] of undestroyed) {
      stop()
      rmSync(left, { recursive: true, force: true })
    }
  })
  // Interrupted (Ctrl-C, or the runner ending its children): exit, which runs the above.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(128 + constants.signals[signal]))
}

/**
 * A PostgreSQL cluster of the test's own, in a fresh temporary folder and on a free port, so a
 * test may stop and start it at will: the machine's shared server is never touched.
 */
export async function createPrivateCluster(bin: string): Promise<PrivateCluster> {
  const folder = mkdtempSync(path.join(tmpdir(), 'mls-cluster-'))
  const dataDir = path.join(folder, 'data')
  const { uid, gid } = await userIds(CLUSTER_USER)
  chownSync(folder, uid, gid)
  const asClusterUser = (program: string, args: string[]) => run(RUNUSER, ['-u', CLUSTER_USER, '--', path.join(bin, program), ...args])
  const pgCtl = (args: string[]) => asClusterUser('pg_ctl', ['-D', dataDir, '-w', '-t', PG_CTL_WAIT_S, ...args])
  // A server runs while its pid file is there (pg_ctl removes it on stop, even `-m immediate`).
  const isRunning = () => existsSync(path.join(dataDir, 'postmaster.pid'))
  const stopIfRunning = async () => {
    if (isRunning()) await pgCtl(['-m', 'immediate', 'stop']).catch(() => undefined)
  }
  stopOnExit(folder, () => {
    if (!isRunning()) return
    try {
      execFileSync(RUNUSER, ['-u', CLUSTER_USER, '--', path.join(bin, 'pg_ctl'), '-D', dataDir, '-w', '-m', 'immediate', 'stop'], { stdio: 'ignore' })
    } catch {
      // Nothing more can be done as the process exits.
    }
  })
  try {
    await asClusterUser('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync'])
    const port = await freePort()
    // The socket in the cluster's own folder, TCP on loopback only: nothing shared with the machine's server.
    const serverOptions = `-p ${port} -k ${folder} -c listen_addresses=127.0.0.1`
    const cluster: PrivateCluster = {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      async start() {
        await pgCtl(['-l', path.join(folder, 'server.log'), '-o', serverOptions, 'start'])
      },
      async crash() {
        await pgCtl(['-m', 'immediate', 'stop'])
      },
      async destroy() {
        await stopIfRunning()
        rmSync(folder, { recursive: true, force: true })
        undestroyed.delete(folder)
      },
    }
    await cluster.start()
    return cluster
  } catch (error) {
    await stopIfRunning()
    rmSync(folder, { recursive: true, force: true })
    undestroyed.delete(folder)
    throw error
  }
}

async function userIds(user: string): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run('id', ['-u', user]), run('id', ['-g', user])])
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
}
