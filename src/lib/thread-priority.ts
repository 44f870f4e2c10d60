/**
 * Lowers the CPU priority of this process's threads of one name, on Linux (where each thread
 * has its own nice value and its name in /proc/self/task/<id>/comm); elsewhere it does nothing.
 * Threads are started on demand, so each call looks again and renices the ones it has not seen.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { setPriority } from 'node:os'

const reniced = new Set<number>()

export function lowerPriorityOfThreads(name: string, niceness: number): void {
  let threads: string[]
  try {
    threads = readdirSync('/proc/self/task')
  } catch {
    return
  }
  for (const entry of threads) {
    const id = Number(entry)
    if (reniced.has(id)) continue
    try {
      if (readFileSync(`/proc/self/task/${entry}/comm`, 'utf8').trim() !== name) continue
      setPriority(id, niceness)
      reniced.add(id)
    } catch {
      // The thread ended meanwhile, or the system refuses: it keeps running at the process's priority.
    }
  }
}
