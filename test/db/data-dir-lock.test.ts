import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
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

/** A data directory of its own, the lock folder beside it, and the pid file of earlier releases. */
function dataDir(): { dir: string; locks: string; legacy: string } {
  const dir = path.join(parent, `data-${++folders}`, 'pglite')
  mkdirSync(`${dir}.locks`, { recursive: true })
  return { dir, locks: `${dir}.locks`, legacy: `${dir}.pid` }
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

  it('refuses a directory held by another live process, and leaves its file', async () => {
    const { dir, locks } = dataDir()
    writeFileSync(path.join(locks, String(process.ppid)), '')
    await assert.rejects(lockDataDir(dir), refusedAsInUse)
    assert.deepEqual(readdirSync(locks), [String(process.ppid)])
  })

  it('refuses while a process of an earlier release holds it by its pid file', async () => {
    const { dir, legacy } = dataDir()
    writeFileSync(legacy, String(process.ppid))
    await assert.rejects(lockDataDir(dir), refusedAsInUse)
    assert.equal(readFileSync(legacy, 'utf8'), String(process.ppid))
  })

  it('removes the files of processes that are gone, and of this process when it does not hold the directory, then holds it', async () => {
    const { dir, locks, legacy } = dataDir()
    const gone = String(deadPid())
    for (const name of [gone, String(process.pid), 'not-a-pid']) writeFileSync(path.join(locks, name), '')
    writeFileSync(legacy, String(deadPid()))
    const release = await lockDataDir(dir)
    assert.deepEqual(readdirSync(locks), [String(process.pid)])
    assert.equal(existsSync(legacy), false)
    await assert.rejects(lockDataDir(dir), refusedAsInUse, 'a second opener in the same process')
    release()
    assert.deepEqual(readdirSync(locks), [])
    ;(await lockDataDir(dir))()
  })

  it('lets exactly one of several processes opening at once hold the directory, over a file left by a dead one', async () => {
    const { dir, locks } = dataDir()
    writeFileSync(path.join(locks, String(deadPid())), '')
    // Each process loads the lock, says it is ready, tries at the word, says whether it holds
    // the directory, and keeps it until told to end.
    const script = `
      import { createInterface } from 'node:readline'
      const { lockDataDir } = await import(${JSON.stringify(codeFile('src/db/data-dir-lock'))})
      const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
      console.log('ready')
      await lines.next()
      try { await lockDataDir(${JSON.stringify(dir)}); console.log('held') } catch (error) { console.log(error.name) }
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
      assert.deepEqual(readdirSync(locks), [String(holder.child.pid)])
    } finally {
      for (const opener of openers) opener.child.stdin.end()
      await Promise.all(openers.map((opener) => opener.exited))
    }
  })
})
