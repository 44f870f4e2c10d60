import autocannon from 'autocannon'
import { readFileSync } from 'node:fs'
const ids = readFileSync('/tmp/ids.txt', 'utf8').trim().split('\n')
const port = process.argv[2]
const result = await autocannon({
  url: `http://127.0.0.1:${port}`, connections: 50, duration: 10,
  requests: [{ setupRequest: (r: any) => ({ ...r, path: `/mls/properties/${ids[Math.floor(Math.random() * ids.length)]}` }) }],
})
console.log(result.requests.average, result.latency.p99)
