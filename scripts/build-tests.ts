/**
 * Builds what `npm test` runs: the service, the tests and the client, transpiled to plain
 * JavaScript under `.test-build/`, the repository's layout kept. Loading the app from TypeScript
 * through tsx's loader hooks costs every process that does it (the test processes and every
 * service process a test starts) about 1.2 s more, 1.8 s of CPU, than loading the same code as
 * JavaScript. esbuild is the transpiler tsx itself uses, so the code that runs is the same; the
 * types are checked by `npm run typecheck`, not here.
 *
 * The test files are then run by `TEST_CONCURRENCY` (3) processes taking them from one queue,
 * longest first (`test/helpers/test-queue.ts`): the build writes the queue and the processes'
 * entry points, `.test-build/runners/*.test.js`.
 *
 * Alongside the code: the migrations and package.json, which the service reads beside its
 * sources, the tests' fixtures, and the client as the installed package the tests import
 * (`node_modules/@open-mls/client`, found from the tests before the workspace's link to the
 * unbuilt package).
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { build, type BuildOptions } from 'esbuild'
import type { TestQueue } from '../test/helpers/test-queue.js'

const root = path.resolve(import.meta.dirname, '..')
const out = path.join(root, '.test-build')
const client = path.join(out, 'node_modules/@open-mls/client')

const transpile: BuildOptions = { platform: 'node', format: 'esm', target: 'node20', sourcemap: 'linked', logLevel: 'warning', absWorkingDir: root }

rmSync(out, { recursive: true, force: true })
await Promise.all([
  build({ ...transpile, entryPoints: ['src/**/*.ts', 'test/**/*.ts'], outbase: '.', outdir: out }),
  build({ ...transpile, entryPoints: ['clients/typescript/src/**/*.ts'], outbase: 'clients/typescript/src', outdir: path.join(client, 'dist') }),
])
const copies: [from: string, to: string][] = [
  ['drizzle', path.join(out, 'drizzle')],
  ['package.json', path.join(out, 'package.json')],
  ['test/feeds/fixtures', path.join(out, 'test/feeds/fixtures')],
  ['clients/typescript/package.json', path.join(client, 'package.json')],
]
for (const [from, to] of copies) cpSync(path.join(root, from), to, { recursive: true })

const files = readdirSync(path.join(root, 'test'), { recursive: true, encoding: 'utf8' })
  .filter((file) => /^[^/]+\/[^/]+\.test\.ts$/.test(file))
  .map((file) => `test/${file.replace(/\.ts$/, '.js')}`)
const durationsFile = path.join(root, 'node_modules/.cache/open-mls/test-durations.jsonl')
const durations = lastDurations(durationsFile, new Set(files))
// Files not run before go first: they may be the longest.
files.sort((a, b) => (durations.get(b) ?? Infinity) - (durations.get(a) ?? Infinity) || a.localeCompare(b))
const queue: TestQueue = { files, claims: path.join(out, 'test-claims'), durations: durationsFile }
mkdirSync(queue.claims)
writeFileSync(path.join(out, 'test-queue.json'), JSON.stringify(queue, null, 2))
const processes = Math.max(1, Number(process.env.TEST_CONCURRENCY) || 3)
mkdirSync(path.join(out, 'runners'))
for (let runner = 1; runner <= processes; runner++) {
  writeFileSync(
    path.join(out, `runners/runner-${runner}.test.js`),
    `import { runQueuedTestFiles } from '../test/helpers/test-queue.js'\nawait runQueuedTestFiles(new URL('../test-queue.json', import.meta.url).pathname)\n`,
  )
}

/**
 * Each test file's duration at its last run, from the lines the runners append. The file is
 * rewritten with those alone, for the files that still exist.
 */
function lastDurations(file: string, files: Set<string>): Map<string, number> {
  const last = new Map<string, number>()
  if (!existsSync(file)) return last
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    try {
      const { file: name, ms } = JSON.parse(line) as { file: string; ms: number }
      if (files.has(name)) last.set(name, ms)
    } catch {
      // A line cut short by an interrupted run: the others still count.
    }
  }
  writeFileSync(file, [...last].map(([name, ms]) => `${JSON.stringify({ file: name, ms })}\n`).join(''))
  return last
}
