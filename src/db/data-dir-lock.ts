import { randomInt } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

export class DatabaseInUseError extends Error {
  override name = 'DatabaseInUseError'
}

/** The lock folders this process holds: a file of its own pid is stale unless it holds it. */
const heldHere = new Set<string>()

/** Tries before refusing, each after a random pause (ms): openers at the same instant part. */
const TRIES = 6
const PAUSE_MS = [20, 120] as const

/** Who holds a folder: a process, by its pid on a host (a container sees its own pids). */
interface Holder {
  pid: number
  host: string
}

/**
 * PGlite is an embedded engine: two processes opening one data directory would corrupt it.
 * Each opener writes a file named after itself (`<pid>@<host>`) into a folder beside the
 * directory (`pglite.locks/`), then reads the folder; where it finds another live process's
 * file there, it removes its own and refuses. Of two openers, the one that reads last finds the
 * other's file, so two never hold the directory together, whatever the timing. Openers at the
 * same instant may each find the other's file: each tries again after a random pause, and a
 * holder's file stays, so the refusal names it.
 *
 * A file of a process that is gone (a kill, a crash) is removed by whoever reads it, also when
 * its pid has since been given to another process (after a reboot, say): on Linux each file
 * says when its writer started. No file is ever replaced, so there is no takeover to race.
 * Whether a process is gone is known only on its own host: containers sharing a volume each
 * number their processes from 1, and one restarted keeps its host name, so a file of another
 * host is taken for live (the refusal says which file to remove once that container is gone for
 * good).
 */
export async function lockDataDir(dir: string): Promise<() => void> {
  mkdirSync(dir, { recursive: true })
  // One folder however the directory is named (relative, through a link).
  const real = realpathSync(dir)
  const folder = path.join(path.dirname(real), `${path.basename(real)}.locks`)
  const self: Holder = { pid: process.pid, host: hostname() }
  const own = path.join(folder, fileName(self))
  mkdirSync(folder, { recursive: true })
  // The single pid file of earlier releases: one of them may be running on this directory.
  const legacy = path.join(path.dirname(real), `${path.basename(real)}.pid`)
  for (let tried = 1; ; tried++) {
    if (heldHere.has(folder)) throw inUse(real, self, own)
    writeFileSync(own, processStart(self.pid) ?? '')
    let other: Holder | undefined
    try {
      other = liveOther(folder, legacy, self)
    } catch (error) {
      rmSync(own, { force: true })
      throw error
    }
    if (other === undefined) {
      heldHere.add(folder)
      let released = false
      return () => {
        if (released) return
        released = true
        heldHere.delete(folder)
        rmSync(own, { force: true })
      }
    }
    rmSync(own, { force: true })
    if (tried === TRIES) throw inUse(real, other, path.join(folder, fileName(other)))
    await sleep(randomInt(...PAUSE_MS))
  }
}

function fileName(holder: Holder): string {
  return `${holder.pid}@${holder.host}`
}

/** Another process with a file in `folder` (or the legacy pid file) that may be live; files of processes gone are removed. */
function liveOther(folder: string, legacy: string, self: Holder): Holder | undefined {
  const candidates: [holder: Holder, file: string][] = readdirSync(folder).map((name) => {
    const at = name.indexOf('@')
    // A name not ours (no host) is no process's: removed like a dead one's.
    const holder = at < 0 ? { pid: 0, host: self.host } : { pid: Number(name.slice(0, at)), host: name.slice(at + 1) }
    return [holder, path.join(folder, name)]
  })
  const legacyPid = readPid(legacy)
  if (legacyPid !== undefined) candidates.push([{ pid: legacyPid, host: self.host }, legacy])
  let other: Holder | undefined
  for (const [holder, file] of candidates) {
    if (holder.host !== self.host) other ??= holder
    else if (holder.pid === self.pid) continue
    else if (isAlive(holder.pid) && !startedSince(holder.pid, file)) other ??= holder
    else rmSync(file, { force: true })
  }
  return other
}

/** The pid an earlier release wrote (0 for a file naming none), undefined without a file. */
function readPid(file: string): number | undefined {
  try {
    return Number(readFileSync(file, 'utf8').trim()) || 0
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/**
 * What tells a process from a later one given the same pid, on Linux: the boot it runs in and
 * its start, in clock ticks since that boot (`/proc/<pid>/stat`, field 22). A holder writes its
 * own into its file; undefined where /proc cannot say.
 */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields are counted after the command's name (field 2), which is in parentheses and may hold blanks.
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    return start === undefined || boot === '' ? undefined : `${boot}:${start}`
  } catch {
    return undefined
  }
}

/**
 * Whether the process now numbered `pid` is not the one that wrote `file`: a holder that died
 * (a crash, a reboot) leaves its file, and its pid may since be another process's. A file that
 * says nothing of its writer's start (written by an earlier release, or where /proc cannot
 * say, or read just as it is written) is taken for its live holder's.
 */
function startedSince(pid: number, file: string): boolean {
  let written: string
  try {
    written = readFileSync(file, 'utf8').trim()
  } catch {
    return false
  }
  if (written === '' || !written.includes(':')) return false
  const now = processStart(pid)
  return now !== undefined && now !== written
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function inUse(dir: string, holder: Holder, file: string): DatabaseInUseError {
  const elsewhere = holder.host === hostname() ? '' : ` on host ${holder.host} (once that process is gone for good, remove ${file})`
  return new DatabaseInUseError(
    `The embedded database in ${dir} is in use by process ${holder.pid}${elsewhere}. ` +
      'Stop that process first, use the HTTP admin routes, or set DATABASE_URL to share a PostgreSQL server.',
  )
}
