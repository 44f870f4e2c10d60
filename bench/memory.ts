/**
 * The service's memory, read from outside it in /proc/<pid>/status: what the kernel charges
 * the process (libvips' pixel buffers included, which no V8 heap figure would show). Linux only;
 * elsewhere the readings are undefined and the report says so.
 */
import { readFileSync } from 'node:fs'

export interface MemoryReading {
  /** VmRSS: resident now. */
  rssKiB: number
  /** VmHWM: the most ever resident, since the process started. */
  hwmKiB: number
}

export function readMemory(pid: number): MemoryReading | undefined {
  let status: string
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch {
    return undefined
  }
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? Number.NaN)
  const reading = { rssKiB: kib('VmRSS'), hwmKiB: kib('VmHWM') }
  return Number.isFinite(reading.rssKiB) && Number.isFinite(reading.hwmKiB) ? reading : undefined
}

/**
 * Samples VmRSS every `intervalMs` until stopped. VmHWM alone cannot say when its peak was
 * reached (an earlier scenario may have set it); the samples bound the peak of this window.
 */
export function sampleRss(pid: number, intervalMs: number): { stop(): { maxKiB: number; samples: number } | undefined } {
  let maxKiB = 0
  let samples = 0
  const take = () => {
    const reading = readMemory(pid)
    if (reading === undefined) return
    samples++
    maxKiB = Math.max(maxKiB, reading.rssKiB)
  }
  take()
  const timer = setInterval(take, intervalMs)
  return {
    stop() {
      clearInterval(timer)
      take()
      return samples === 0 ? undefined : { maxKiB, samples }
    },
  }
}
