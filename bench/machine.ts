/**
 * What the bench runs on, and where the CPU goes while it runs: the bench's ratios only mean
 * something next to the machine they were taken on and how busy it was. CPU is read from
 * /proc (Linux): per process for the service, the ceiling, the load generator (this process)
 * and PostgreSQL's processes, and for the whole machine, so work that is none of these (another
 * program on a shared machine) shows up as `other`.
 */
import { readdirSync, readFileSync } from 'node:fs'
import os from 'node:os'

export interface MachineInfo {
  cpu_model: string
  cores: number
  memory_gib: number
  /** 1, 5 and 15 minute load averages when the run started. */
  load_average: [number, number, number]
  node: string
  platform: string
}

export function describeMachine(): MachineInfo {
  const cpus = os.cpus()
  const [one, five, fifteen] = os.loadavg().map((value) => Number(value.toFixed(2)))
  return {
    cpu_model: cpus[0]?.model.trim() ?? 'unknown',
    cores: os.availableParallelism(),
    memory_gib: Number((os.totalmem() / 2 ** 30).toFixed(1)),
    load_average: [one!, five!, fifteen!],
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
  }
}

export function machineLine(machine: MachineInfo): string {
  return (
    `Machine: ${machine.cpu_model}, ${machine.cores} cores, ${machine.memory_gib} GiB; ` +
    `load average ${machine.load_average.join(', ')} before the run; Node ${machine.node}, ${machine.platform}`
  )
}

/** Cores busy on average over a measured interval (1.0 = one core the whole time). */
export interface CpuShares {
  service: number
  ceiling: number
  load_generator: number
  /** PostgreSQL's own processes and the backends of the bench's database: the server runs beside the bench. Null on PGlite. */
  postgres: number | null
  /** Everything else the machine did meanwhile: other programs, the kernel's own work. */
  other: number
  /** The machine's busy cores in all, of `cores`. */
  machine: number
  cores: number
}

interface Snapshot {
  at: number
  service: number
  ceiling: number
  loadGenerator: number
  postgres: Map<number, number>
  machineBusy: number
}

/** The clock ticks /proc counts CPU time in: 100 a second on every Linux built for the last decades. */
const TICKS_PER_SECOND = 100

/**
 * Takes CPU snapshots of the bench's processes. `measure` runs work and says how many cores
 * each process kept busy meanwhile; undefined where /proc cannot be read (not Linux).
 */
export class CpuMeter {
  private readonly available: boolean

  constructor(
    private readonly pids: { service?: number; ceiling?: number },
    /** The bench's database on a PostgreSQL server on this machine; undefined on PGlite. */
    private readonly postgresDatabase: string | undefined,
  ) {
    this.available = readMachineBusy() !== undefined
  }

  async measure<T>(work: () => Promise<T>): Promise<{ result: T; cpu: CpuShares | undefined }> {
    const before = this.available ? this.snapshot() : undefined
    const result = await work()
    return { result, cpu: before ? this.since(before) : undefined }
  }

  private snapshot(): Snapshot {
    const self = process.cpuUsage()
    return {
      at: performance.now(),
      service: processTicks(this.pids.service),
      ceiling: processTicks(this.pids.ceiling),
      loadGenerator: ((self.user + self.system) / 1e6) * TICKS_PER_SECOND,
      postgres: this.postgresDatabase ? postgresTicks(this.postgresDatabase) : new Map<number, number>(),
      machineBusy: readMachineBusy() ?? 0,
    }
  }

  private since(before: Snapshot): CpuShares {
    const after = this.snapshot()
    const seconds = (after.at - before.at) / 1000
    const cores = (ticks: number) => Number((ticks / TICKS_PER_SECOND / seconds).toFixed(2))
    let postgresTicks = 0
    // A backend that started meanwhile counts from zero; one that ended meanwhile is lost (the bench's are long-lived).
    for (const [pid, ticks] of after.postgres) postgresTicks += ticks - (before.postgres.get(pid) ?? 0)
    const service = cores(after.service - before.service)
    const ceiling = cores(after.ceiling - before.ceiling)
    const loadGenerator = cores(after.loadGenerator - before.loadGenerator)
    const postgres = this.postgresDatabase ? cores(postgresTicks) : null
    const machine = cores(after.machineBusy - before.machineBusy)
    const other = Number(Math.max(0, machine - service - ceiling - loadGenerator - (postgres ?? 0)).toFixed(2))
    return { service, ceiling, load_generator: loadGenerator, postgres, other, machine, cores: os.availableParallelism() }
  }
}

/** A process's user + system ticks, 0 once it is gone. */
function processTicks(pid: number | undefined): number {
  if (pid === undefined) return 0
  try {
    return ticksOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return 0
  }
}

/** utime and stime are fields 14 and 15; the command name before them may hold spaces, so count after its `)`. */
function ticksOfStat(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return Number(fields[11]) + Number(fields[12])
}

/**
 * The server's own processes (checkpointer, WAL writer…) and the backends serving `database`;
 * backends of other databases on a shared server are another program's work. A backend names
 * its user, database and client in its title: `postgres: 15/main: postgres mls_bench 127.0.0.1(5432) idle`.
 */
function postgresTicks(database: string): Map<number, number> {
  const ticks = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ')
      const backend = /: \S+ (\S+) (\S+\(\d+\)|\[local\])/.exec(title)
      if (!backend || backend[1] === database) ticks.set(Number(entry), ticksOfStat(stat))
    } catch {
      // the process ended while the list was read
    }
  }
  return ticks
}

/** The machine's busy ticks since boot, all cores: everything but idle, I/O wait and time the hypervisor took (steal). */
function readMachineBusy(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!
    const [, ...values] = line.trim().split(/\s+/)
    const [user, nice, system, , , irq, softirq] = values.map(Number)
    return user! + nice! + system! + irq! + softirq!
  } catch {
    return undefined
  }
}

/**
 * The shares, and with a request rate what each process spent per request: CPU microseconds
 * per request hold much better than rates on a machine whose speed or load moves.
 */
export function cpuLine(cpu: CpuShares, requestsPerSecond?: number): string {
  const perRequest = (cores: number) => (requestsPerSecond ? ` (${Math.round((cores / requestsPerSecond) * 1e6)} µs/req)` : '')
  const parts = [`service ${cpu.service}${perRequest(cpu.service)}`, `ceiling ${cpu.ceiling}${perRequest(cpu.ceiling)}`]
  parts.push(`load generator ${cpu.load_generator}${perRequest(cpu.load_generator)}`)
  if (cpu.postgres !== null) parts.push(`PostgreSQL ${cpu.postgres}${perRequest(cpu.postgres)}`)
  parts.push(`other ${cpu.other}`)
  return `cores busy: ${parts.join(', ')}; machine ${cpu.machine} of ${cpu.cores}`
}
