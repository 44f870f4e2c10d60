import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openConfiguredDatabase } from '../src/runtime.js'
import { catalogueSearch } from '../bench/requests.js'

const config = loadConfig({ ...process.env, RATE_LIMIT_ENABLED: 'false', LOG_LEVEL: 'warn' })
const database = await openConfiguredDatabase(config)
const app = await buildApp({ config, database })
const stats = new Map<string, { n: number; ms: number; max: number }>()
const N = Number(process.argv[2] ?? 3000)
for (let i = 0; i < N + 300; i++) {
  const r = catalogueSearch()
  const url = new URL(r.path, 'http://x')
  const keys = [...url.searchParams.keys()].filter((k) => k !== 'limit' && k !== 'offset').sort().join(',') || '(none)'
  const t = performance.now()
  const res = await app.inject({ method: 'GET', url: r.path })
  const ms = performance.now() - t
  if (res.statusCode !== 200) console.log(res.statusCode, r.path)
  if (i < 300) continue
  const s = stats.get(keys) ?? { n: 0, ms: 0, max: 0 }
  s.n++; s.ms += ms; s.max = Math.max(s.max, ms)
  stats.set(keys, s)
}
const total = [...stats.values()].reduce((a, s) => a + s.ms, 0)
console.log('total ms', total.toFixed(0), 'mean', (total / N).toFixed(2))
for (const [k, s] of [...stats].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25))
  console.log((100 * s.ms / total).toFixed(1).padStart(5) + '%', String(s.n).padStart(5), (s.ms / s.n).toFixed(2).padStart(7), s.max.toFixed(1).padStart(7), k)
await app.close(); await database.close()
