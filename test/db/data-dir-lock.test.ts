import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
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

/** The name of a process's file in the lock folder. */
const lockName = (pid: number) => `${pid}@${hostname()}`

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
    writeFileSync(path.join(locks, lockName(process.ppid)), '')
    await assert.rejects(lockDataDir(dir), refusedAsInUse)
    assert.deepEqual(readdirSync(locks), [lockName(process.ppid)])
  })

  it('takes a file of another host (a container sharing the volume, with pids of its own) for a live process’s, naming the file', async () => {
    const { dir, locks } = dataDir()
    // This process's own pid, as another container may well have.
    const theirs = `${process.pid}@another-container`
    writeFileSync(path.join(locks, theirs), '')
    await assert.rejects(lockDataDir(dir), (error: unknown) => {
      assert.ok(error instanceof DatabaseInUseError)
      assert.match(
        error.message,
        new RegExp(`in use by process ${process.pid} on host another-container \\(once that process is gone for good, remove .*${theirs}\\)`),
      )
      return true
    })
    assert.deepEqual(readdirSync(locks), [theirs])
  })

  it('is one lock however the directory is named: relative, or through a symbolic link', async () => {
    const { dir, locks } = dataDir()
    const release = await lockDataDir(dir)
    try {
      await assert.rejects(lockDataDir(path.relative(process.cwd(), dir)), refusedAsInUse)
      const link = path.join(path.dirname(dir), 'current')
      symlinkSync(dir, link)
      await assert.rejects(lockDataDir(link), refusedAsInUse)
      assert.deepEqual(readdirSync(locks), [lockName(process.pid)])
      assert.equal(existsSync(`${link}.locks`), false)
    } finally {
      release()
    }
  })

  it('refuses while a process of an earlier release holds it by its pid file', async () => {
    const { dir, legacy } = dataDir()
    writeFileSync(legacy, String(process.ppid))
    await assert.rejects(lockDataDir(dir), refusedAsInUse)
    assert.equal(readFileSync(legacy, 'utf8'), String(process.ppid))
  })

  it('removes the files of processes that are gone, and of this process when it does not hold the directory, then holds it', async () => {
    const { dir, locks, legacy } = dataDir()
    for (const name of [lockName(deadPid()), lockName(process.pid), 'not-a-pid']) writeFileSync(path.join(locks, name), '')
    writeFileSync(legacy, String(deadPid()))
    const release = await lockDataDir(dir)
    assert.deepEqual(readdirSync(locks), [lockName(process.pid)])
    assert.equal(existsSync(legacy), false)
    await assert.rejects(lockDataDir(dir), refusedAsInUse, 'a second opener in the same process')
    release()
    assert.deepEqual(readdirSync(locks), [])
    const again = await lockDataDir(dir)
    release()
    assert.deepEqual(readdirSync(locks), [lockName(process.pid)], 'a release called again lets go of nothing')
    again()
  })

  it(
    'removes the file of a holder that died, whose pid another process has since taken (a reboot, say)',
    { skip: process.platform !== 'linux' && 'a holder says when it started through /proc' },
    async () => {
      // What a holder writes of itself: this process's start, read back from a file of its own.
      const mine = dataDir()
      const release = await lockDataDir(mine.dir)
      const thisStart = readFileSync(path.join(mine.locks, lockName(process.pid)), 'utf8')
      release()
      assert.match(thisStart, /^[0-9a-f-]+:\d+$/)
      // The parent process is alive, and did not start when this one did.
      const { dir, locks } = dataDir()
      writeFileSync(path.join(locks, lockName(process.ppid)), thisStart)
      const held = await lockDataDir(dir)
      assert.deepEqual(readdirSync(locks), [lockName(process.pid)])
      held()
    },
  )

  it('lets exactly one of several processes opening at once hold the directory, over a file left by a dead one', async () => {
    const { dir, locks } = dataDir()
    writeFileSync(path.join(locks, lockName(deadPid())), '')
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
      assert.deepEqual(readdirSync(locks), [lockName(holder.child.pid!)])
    } finally {
      for (const opener of openers) opener.child.stdin.end()
      await Promise.all(openers.map((opener) => opener.exited))
    }
  })
})
