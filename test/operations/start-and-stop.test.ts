import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import path from 'node:path'
import { describe, it } from 'node:test'
import pg from 'pg'
import { MIGRATION_LOCK_ID } from '../../src/db/migrate.js'
import { codeRoot, nodeArguments } from '../helpers/code-tree.js'
import { emptyServerDatabase, engine, newDataDir } from '../helpers/database.js'
import { freePort } from '../helpers/service-process.js'
import { waitFor } from '../helpers/webhooks.js'

/*
 * What a process says when it cannot start, what it answers while it waits for migrations, and
 * how it stops when npm is told to stop it. (A readiness probe while it closes: closing-answers.test.ts.)
 */

/** A process of the service, started without waiting for anything. */
function spawnProcess(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: codeRoot,
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, exited, output: () => ({ stdout, stderr }) }
}

describe('start-up', () => {
  // docs/operations.md, Processes: "an unreachable database stops it with one line saying so".
  it('stops on an unreachable database with one line saying so, no stack trace', async () => {
    const port = await freePort()
    const dataDir = await newDataDir('mls-unreachable-', { pglite: false })
    const worker = spawnProcess(nodeArguments('src/worker/main'), {
      DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/nothing`,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
    })
    try {
      const code = await worker.exited
      const { stdout, stderr } = worker.output()
      const output = `${stdout}${stderr}`
      assert.notEqual(code, 0)
      assert.match(output, /ECONNREFUSED/)
      assert.doesNotMatch(output, /\n\s+at |\\n\s+at /, `a stack trace in the output:\n${output}`)
      assert.equal(output.trim().split('\n').length, 1, `more than one line:\n${output}`)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('start-up on a port another process holds', () => {
  // docs/operations.md, Processes: what stops a process at start says so in one line.
  it('stops with one line naming the address, no stack trace, closing what it opened', async () => {
    const holder = createServer()
    holder.listen(0, '127.0.0.1')
    await once(holder, 'listening')
    const port = (holder.address() as AddressInfo).port
    const dataDir = await newDataDir('mls-port-taken-', { pglite: true })
    const api = spawnProcess(nodeArguments('src/server'), { DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(port), METRICS_PORT: '0', LOG_LEVEL: 'warn' })
    try {
      const code = await api.exited
      const { stdout, stderr } = api.output()
      assert.equal(code, 1, `${stdout}${stderr}`)
      assert.equal(stderr.trim(), `Cannot listen on 127.0.0.1:${port}: another process is listening there (set PORT to a free port).`)
      assert.doesNotMatch(stdout, /\n\s+at |\\n\s+at /, `a stack trace in the output:\n${stdout}`)
    } finally {
      holder.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('start-up while another process migrates', { skip: engine !== 'postgres' && 'needs PostgreSQL (DATABASE_URL)' }, () => {
  // docs/operations.md, Health: /healthz is 200 while the process runs, /readyz 503 until every
  // migration is applied. A process waiting for another's migrations (a long one on a big
  // catalogue) must answer both, or a liveness probe takes it for dead.
  it('answers /healthz 200, /readyz 503 and other routes 503 until the migrations are applied, then serves', async () => {
    const database = await emptyServerDatabase()
    const dataDir = await newDataDir('mls-waiting-', { pglite: false })
    // The lock migrations take, held as another process's migration would hold it.
    const other = new pg.Client({ connectionString: database.url })
    await other.connect()
    await other.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID])
    const port = await freePort()
    const api = spawnProcess([...nodeArguments('src/server'), '--no-worker'], {
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      PORT: String(port),
      METRICS_PORT: '0',
      SECRET_KEY: 'start-up-test-secret-key-long-enough-0123',
      LOG_LEVEL: 'warn',
    })
    const get = (path: string) =>
      fetch(`http://127.0.0.1:${port}${path}`).then(
        async (response) => ({ status: response.status, body: await response.text() }),
        () => ({ status: 0, body: '' }),
      )
    try {
      await waitFor(async () => (await get('/healthz')).status === 200, 30_000, '/healthz to answer 200')
      const readiness = await get('/readyz')
      assert.equal(readiness.status, 503, readiness.body)
      assert.equal((JSON.parse(readiness.body) as { status: string }).status, 'not_ready')
      const catalogue = await get('/mls/properties')
      assert.equal(catalogue.status, 503, catalogue.body)
      assert.match(catalogue.body, /being migrated/)
      await other.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID])
      await waitFor(async () => (await get('/readyz')).status === 200, 60_000, '/readyz to answer 200')
      assert.equal((await get('/mls/properties')).status, 200)
    } finally {
      api.child.kill('SIGKILL')
      await api.exited
      await other.end()
      await database.drop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('shutdown', () => {
  // As a supervisor stops `npm start` (a container's main process, say): SIGTERM to npm. Through
  // `sh -c`, the service never got it and ran on, orphaned; the scripts `exec` it instead.
  it('closes gracefully when `npm run start:api` is sent SIGTERM', async () => {
    // The scripts run the TypeScript sources: from the repository, not from npm test's build of it.
    const repository = existsSync(path.join(codeRoot, 'src/server.ts')) ? codeRoot : path.resolve(codeRoot, '..')
    const dataDir = await newDataDir('mls-npm-start-', { pglite: true })
    const port = await freePort()
    const npm = spawn('npm', ['run', '--silent', 'start:api'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: dataDir, PORT: String(port), METRICS_PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: repository,
      // A process group of its own, to stop whatever is left of it afterwards.
      detached: true,
    })
    let output = ''
    npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const answers = () =>
      fetch(`http://127.0.0.1:${port}/healthz`).then(
        (response) => response.ok,
        () => false,
      )
    try {
      await waitFor(answers, 60_000, 'the service to answer')
      npm.kill('SIGTERM')
      await waitFor(() => output.includes('"msg":"closing"'), 30_000, 'the service to log that it is closing')
      await waitFor(async () => !(await answers()), 30_000, 'the service to stop answering')
    } finally {
      // npm and whatever it started, the service too had it been orphaned.
      try {
        process.kill(-npm.pid!, 'SIGKILL')
      } catch {
        // Every one of them gone already.
      }
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
