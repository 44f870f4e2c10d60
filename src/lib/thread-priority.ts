/**
 * Lowers the CPU priority of this process's threads of one name, on Linux (where each thread
 * has its own nice value and its name in /proc/self/task/<id>/comm); elsewhere it does nothing.
 * Threads come and go (and an id may be reused), so each call looks at all of them again: a few
 * system calls, against the tens of milliseconds of the work it is called for.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { setPriority } from 'node:os'

export function lowerPriorityOfThreads(name: string, niceness: number): void {
  let threads: string[]
  try {
    threads = readdirSync('/proc/self/task')
  } catch {
    return
  }
  for (const entry of threads) {
    try {
      if (readFileSync(`/proc/self/task/${entry}/comm`, 'utf8').trim() === name) setPriority(Number(entry), niceness)
    } catch {
      // The thread ended meanwhile, or the system refuses: it keeps running at the process's priority.
    }
  }
}
