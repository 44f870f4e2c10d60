/**
 * A one-line progress bar on stderr, `[#####.....] 40% 400000/1000000 12.3s`, redrawn in
 * place; stdout stays free for results.
 */
export class ProgressBar {
  private readonly started = performance.now()

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly width = 30,
  ) {
    this.update(0)
  }

  update(done: number): void {
    const share = this.total === 0 ? 1 : done / this.total
    const filled = Math.round(share * this.width)
    const seconds = ((performance.now() - this.started) / 1000).toFixed(1)
    const bar = '#'.repeat(filled) + '.'.repeat(this.width - filled)
    process.stderr.write(`\r${this.label} [${bar}] ${Math.floor(share * 100)}% ${done}/${this.total} ${seconds}s`)
  }

  done(): void {
    process.stderr.write('\n')
  }
}
