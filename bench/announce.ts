/** How a child server tells the bench where it listens: one JSON line on stdout. */
export interface Announcement {
  bench_port: number
}

export function announce(port: number): void {
  process.stdout.write(`${JSON.stringify({ bench_port: port } satisfies Announcement)}\n`)
}

/** The port of an announcement line, or undefined for any other line (logs share stdout). */
export function portOf(line: string): number | undefined {
  if (!line.startsWith('{"bench_port"')) return undefined
  try {
    return (JSON.parse(line) as Announcement).bench_port
  } catch {
    return undefined
  }
}

/**
 * Runs `close` when the bench goes away, however it goes: a signal it forwards, or its death,
 * which closes our stdin pipe. So no server outlives the bench that started it.
 */
export function closeWithParent(close: () => Promise<void>): void {
  let closing = false
  const once = () => {
    if (closing) return
    closing = true
    void close().finally(() => process.exit(0))
  }
  process.on('SIGTERM', once)
  process.on('SIGINT', once)
  process.stdin.on('end', once).resume()
}
