import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'

export class DatabaseInUseError extends Error {
  override name = 'DatabaseInUseError'
}

/** The lock files this process holds: our own pid in a file is stale unless it is one of them. */
const locksHeldHere = new Set<string>()

/** Rounds of taking a stale file over before giving up: each lost round means another opener won. */
const MAX_ROUNDS = 5

/**
 * PGlite is an embedded engine: two processes opening one data directory would corrupt it.
 * A pid file beside the directory turns that into a clear error instead; the returned function
 * releases it.
 *
 * The file is written whole under another name and linked into place, so it never exists
 * without its pid (a link fails where the file exists, and no reader sees it half written). A
 * file whose process is gone (a kill, a crash, a restarted container that reuses pids) is taken
 * over: moved aside under a name of our own first, and removed only if it still names the dead
 * process. Where another opener took it over in between, the file moved is theirs: it is linked
 * back, and they hold the directory.
 */
export function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true })
  const lockFile = path.join(path.dirname(dir), `${path.basename(dir)}.pid`)
  const partial = `${lockFile}.${process.pid}.partial`
  const setAside = `${lockFile}.${process.pid}.stale`
  writeFileSync(partial, String(process.pid))
  try {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (tryLink(partial, lockFile)) {
        locksHeldHere.add(lockFile)
        return () => {
          locksHeldHere.delete(lockFile)
          rmSync(lockFile, { force: true })
        }
      }
      const owner = ownerOf(lockFile)
      if (owner === undefined) continue // released meanwhile
      if (isHeld(lockFile, owner)) {
        throw new DatabaseInUseError(
          `The embedded database in ${dir} is in use by process ${owner}. ` +
            'Stop that process first, use the HTTP admin routes, or set DATABASE_URL to share a PostgreSQL server.',
        )
      }
      try {
        renameSync(lockFile, setAside)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue // another opener moved it first
        throw error
      }
      if (ownerOf(setAside) !== owner) tryLink(setAside, lockFile) // theirs, not the dead one: put back
      rmSync(setAside, { force: true })
    }
    throw new DatabaseInUseError(`Could not lock the embedded database in ${dir}: other processes kept opening it.`)
  } finally {
    rmSync(partial, { force: true })
  }
}

/** Links `from` to `to`; false where `to` exists. */
function tryLink(from: string, to: string): boolean {
  try {
    linkSync(from, to)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  }
}

/** The pid the file names (0 for a file that names none), undefined when there is no file. */
function ownerOf(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim())
    return Number.isInteger(pid) && pid > 0 ? pid : 0
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

function isHeld(lockFile: string, owner: number): boolean {
  if (owner === 0) return false
  if (owner === process.pid) return locksHeldHere.has(lockFile)
  try {
    process.kill(owner, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
