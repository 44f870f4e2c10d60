import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { after, describe, it } from 'node:test'
import { openDatabase } from '../../src/db/client.js'
import { DatabaseInUseError, lockDataDir } from '../../src/db/data-dir-lock.js'
import { codeFile, codeLoaderArguments } from '../helpers/code-tree.js'
import { newDataDir } from '../helpers/database.js'

const parent = mkdtempSync(path.join(tmpdir(), 'mls-lock-'))
after(() => rmSync(parent, { recursive: true, force: true }))
let folders = 0

/** A data directory of its own, and the pid file beside it. */
function dataDir(): { dir: string; lockFile: string } {
  const dir = path.join(parent, `data-${++folders}`, 'pglite')
  return { dir, lockFile: `${dir}.pid` }
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', ''])
  return child.pid
}

function refusedAsInUse(error: unknown): boolean {
  assert.ok(error instanceof DatabaseInUseError)
  assert.match(error.message, /is in use by process \d+/)
  return true
}

describe('the embedded database’s lock', () => {
  it('refuses a second opener of the same data directory with a clear error, and opens again once closed', async () => {
    // A copy of the migrated template: a new folder's initdb is `npm run migrate`'s test.
    const dir = path.join(await newDataDir('mls-lock-', { pglite: true }), 'pglite')
    try {
      const first = await openDatabase({ databaseUrl: undefined, pgliteDir: dir })
      try {
        await assert.rejects(openDatabase({ databaseUrl: undefined, pgliteDir: dir }), refusedAsInUse)
      } finally {
        await first.close()
      }
      const again = await openDatabase({ databaseUrl: undefined, pgliteDir: dir })
      await again.close()
    } finally {
      rmSync(path.dirname(dir), { recursive: true, force: true })
    }
  })

  it('keeps a directory held by another live process, and its file', () => {
    const { dir, lockFile } = dataDir()
    lockDataDir(dir)()
    writeFileSync(lockFile, String(process.ppid))
    assert.throws(() => lockDataDir(dir), refusedAsInUse)
    assert.equal(readFileSync(lockFile, 'utf8'), String(process.ppid))
  })

  it('takes over a file left by a process that is gone, one naming no process, and one naming this process that it does not hold', () => {
    for (const left of [String(deadPid()), '', String(process.pid)]) {
      const { dir, lockFile } = dataDir()
      lockDataDir(dir)()
      writeFileSync(lockFile, left)
      const release = lockDataDir(dir)
      assert.equal(readFileSync(lockFile, 'utf8'), String(process.pid), `over ${JSON.stringify(left)}`)
      assert.throws(() => lockDataDir(dir), refusedAsInUse)
      release()
      assert.equal(existsSync(lockFile), false)
    }
  })

  it('lets exactly one of several processes opening at once hold the directory, over a file left by a dead one', async () => {
    const { dir, lockFile } = dataDir()
    lockDataDir(dir)()
    writeFileSync(lockFile, String(deadPid()))
    // Each process loads the lock, says it is ready, tries at the word, says whether it holds
    // the directory, and keeps it until told to end.
    const script = `
      import { createInterface } from 'node:readline'
      const { lockDataDir } = await import(${JSON.stringify(codeFile('src/db/data-dir-lock'))})
      const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
      console.log('ready')
      await lines.next()
      try { lockDataDir(${JSON.stringify(dir)}); console.log('held') } catch (error) { console.log(error.name) }
      await lines.next()
    `
    const openers = Array.from({ length: 4 }, () => {
      const child = spawn(process.execPath, [...codeLoaderArguments, '--input-type=module', '-e', script], {
        stdio: ['pipe', 'pipe', 'inherit'],
      })
      const said = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
      const next = async () => String((await said.next()).value)
      return { child, next, exited: new Promise((resolve) => child.on('exit', resolve)) }
    })
    try {
      for (const opener of openers) assert.equal(await opener.next(), 'ready')
      for (const opener of openers) opener.child.stdin.write('go\n')
      const outcomes = await Promise.all(openers.map((opener) => opener.next()))
      assert.deepEqual(outcomes.toSorted(), ['DatabaseInUseError', 'DatabaseInUseError', 'DatabaseInUseError', 'held'])
      const holder = openers[outcomes.indexOf('held')]!
      assert.equal(readFileSync(lockFile, 'utf8'), String(holder.child.pid))
    } finally {
      for (const opener of openers) opener.child.stdin.end()
      await Promise.all(openers.map((opener) => opener.exited))
    }
  })
})
