/**
 * `npm run bench:profile -- <file.cpuprofile> [--skip-seconds S]`: where a V8 CPU profile of
 * one of the bench's servers (BENCH_NODE_FLAGS) spent its busy time, by kind of work and by function. Idle
 * samples are left out, and so is the start-up (the first S seconds, 10 by default: loading
 * modules and opening the database are not what a request costs).
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

/** Kinds of work, tried in order on the function that was running (its URL or its name). */
const KINDS: [kind: string, matches: (frame: ProfileNode['callFrame']) => boolean][] = [
  ['socket writes (writev, write)', (frame) => frame.url === '' && /^(writev|writeBuffer|writeUtf8String|writeLatin1String)$/.test(frame.functionName)],
  ['garbage collection', (frame) => frame.functionName === '(garbage collector)'],
  ['PostgreSQL driver (pg, pg-protocol)', (frame) => /node_modules\/(pg|pg-protocol|pg-types)\//.test(frame.url)],
  ['Drizzle ORM', (frame) => frame.url.includes('node_modules/drizzle-orm/')],
  ['JSON serialization (fast-json-stringify)', (frame) => frame.url.includes('node_modules/fast-json-stringify/') || /^anonymous\d*$/.test(frame.functionName)],
  ['Fastify and its plugins', (frame) => /node_modules\/(fastify|@fastify|find-my-way|fast-querystring|light-my-request|avvio|helmet|ajv)/.test(frame.url)],
  ['metrics (prom-client)', (frame) => frame.url.includes('node_modules/prom-client/')],
  ['the service (src/)', (frame) => frame.url.includes('/src/')],
  ['Node: HTTP, streams, buffers, crypto', (frame) => frame.url.startsWith('node:')],
]

const { values, positionals } = parseArgs({ allowPositionals: true, options: { 'skip-seconds': { type: 'string', default: '10' } } })
const file = positionals[0]
if (!file) {
  console.error('Usage: npm run bench:profile -- <file.cpuprofile> [--skip-seconds S]')
  process.exit(1)
}
const skipMicros = Number(values['skip-seconds']) * 1e6
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
const nodes = new Map(profile.nodes.map((node) => [node.id, node]))

const byKind = new Map<string, number>()
const byFunction = new Map<string, number>()
let busy = 0
let elapsed = 0
for (const [index, sampled] of profile.samples.entries()) {
  elapsed += profile.timeDeltas[index] ?? 0
  // A sample stands for the time until the next one.
  const weight = profile.timeDeltas[index + 1] ?? 0
  if (elapsed < skipMicros) continue
  const frame = nodes.get(sampled)!.callFrame
  if (frame.functionName === '(idle)') continue
  busy += weight
  const kind = KINDS.find(([, matches]) => matches(frame))?.[0] ?? 'other (V8, native, microtasks)'
  byKind.set(kind, (byKind.get(kind) ?? 0) + weight)
  const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(src|bench)\//, '$1/')}:${frame.lineNumber + 1}`
  byFunction.set(name, (byFunction.get(name) ?? 0) + weight)
}

const share = (micros: number) => `${((micros / busy) * 100).toFixed(1).padStart(5)} %`
console.log(
  `busy ${(busy / 1e6).toFixed(1)} s of ${(Math.max(0, elapsed - skipMicros) / 1e6).toFixed(1)} s profiled after the first ${values['skip-seconds']} s\n`,
)
console.log('By kind of work:')
for (const [kind, micros] of [...byKind].sort((a, b) => b[1] - a[1])) console.log(`  ${share(micros)}  ${kind}`)
console.log('\nBy function (self time), the top 25:')
for (const [name, micros] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${share(micros)}  ${name}`)
