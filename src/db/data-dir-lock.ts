import { randomInt } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

export class DatabaseInUseError extends Error {
  override name = 'DatabaseInUseError'
}

/** The folders this process holds: a file of our own pid is stale unless it holds it. */
const heldHere = new Set<string>()

/** Tries before refusing, each after a random pause (ms): openers at the same instant part. */
const TRIES = 6
const PAUSE_MS = [20, 120] as const

/**
 * PGlite is an embedded engine: two processes opening one data directory would corrupt it.
 * Each opener writes a file named after its pid into a folder beside the directory
 * (`pglite.locks/`), then reads the folder; where it finds another live process's file there,
 * it removes its own and refuses. Of two openers, the one that reads last finds the other's
 * file, so two never hold the directory together, whatever the timing. Openers at the same
 * instant may each find the other's file: each tries again after a random pause, and a holder's
 * file stays, so the refusal names it. A file of a process that is gone (a kill, a crash) is
 * removed by whoever reads it; no file is ever replaced, so there is no takeover to race.
 * The returned function releases the directory.
 */
export async function lockDataDir(dir: string): Promise<() => void> {
  mkdirSync(dir, { recursive: true })
  const folder = path.join(path.dirname(dir), `${path.basename(dir)}.locks`)
  const own = path.join(folder, String(process.pid))
  mkdirSync(folder, { recursive: true })
  // The single pid file of earlier releases: one of them may be running on this directory.
  const legacy = path.join(path.dirname(dir), `${path.basename(dir)}.pid`)
  for (let tried = 1; ; tried++) {
    if (heldHere.has(folder)) throw inUse(dir, process.pid)
    writeFileSync(own, '')
    const other = liveOthers(folder, legacy)
    if (other === undefined) {
      heldHere.add(folder)
      return () => {
        heldHere.delete(folder)
        rmSync(own, { force: true })
      }
    }
    rmSync(own, { force: true })
    if (tried === TRIES) throw inUse(dir, other)
    await sleep(randomInt(...PAUSE_MS))
  }
}

/** The pid of another live process with a file in `folder` (or the legacy pid file); files of processes gone are removed. */
function liveOthers(folder: string, legacy: string): number | undefined {
  const candidates: [pid: number, file: string][] = readdirSync(folder).map((name) => [Number(name), path.join(folder, name)])
  const legacyPid = readPid(legacy)
  if (legacyPid !== undefined) candidates.push([legacyPid, legacy])
  let other: number | undefined
  for (const [pid, file] of candidates) {
    if (pid === process.pid) continue
    if (isAlive(pid)) other ??= pid
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

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function inUse(dir: string, pid: number): DatabaseInUseError {
  return new DatabaseInUseError(
    `The embedded database in ${dir} is in use by process ${pid}. ` +
      'Stop that process first, use the HTTP admin routes, or set DATABASE_URL to share a PostgreSQL server.',
  )
}
