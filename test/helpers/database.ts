import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { drizzle } from 'drizzle-orm/pglite'
import pg from 'pg'
import { openDatabase, type Database, type DatabaseHandle } from '../../src/db/client.js'
import { migrateDatabase, migrationsFolder } from '../../src/db/migrate.js'
import * as schema from '../../src/db/schema.js'
import { codeFile, codeRoot } from './code-tree.js'

/** PostgreSQL when the environment names one (CI's second run), else in-memory PGlite. */
export const serverUrl = process.env.DATABASE_URL || undefined
export const engine = serverUrl ? 'postgres' : 'pglite'

export interface FreshDatabase {
  handle: DatabaseHandle
  /** The URL of the fresh PostgreSQL database, for child processes; undefined on PGlite. */
  url: string | undefined
  /** Its name on the PostgreSQL server; undefined on PGlite. */
  name: string | undefined
  drop(): Promise<void>
}

export interface FreshDatabaseOptions {
  /** The PostgreSQL server to create it on, when not the one DATABASE_URL names (a private cluster). */
  serverUrl?: string
  /** DatabaseOptions.statementTimeoutMs, on PostgreSQL. */
  statementTimeoutMs?: number
}

/**
 * A new, empty, migrated database for one test file: a PGlite in memory, or a database
 * created for the purpose on the PostgreSQL server and dropped afterwards.
 *
 * Each is a copy of a template migrated once (see `migratedTemplateKey`), not migrated anew:
 * on PGlite that saves a second engine instance and initdb, seconds of CPU per database; on
 * PostgreSQL, running the migrations over the network. The migrations themselves are tested
 * on empty databases in test/db/migrate.test.ts.
 */
export async function freshDatabase({ serverUrl: server = serverUrl, statementTimeoutMs }: FreshDatabaseOptions = {}): Promise<FreshDatabase> {
  if (!server) {
    const handle = await openDatabase({ databaseUrl: undefined, pgliteDir: undefined, pgliteDataDirDump: await pgliteTemplate() })
    return { handle, url: undefined, name: undefined, drop: () => handle.close() }
  }
  const template = await serverTemplate(server)
  const name = `mls_test_${randomBytes(6).toString('hex')}`
  await createDatabaseFrom(server, name, template)
  const url = new URL(server)
  url.pathname = `/${name}`
  const handle = await openDatabase({ databaseUrl: url.toString(), pgliteDir: undefined, poolSize: 5, statementTimeoutMs })
  return {
    handle,
    url: url.toString(),
    name,
    async drop() {
      await handle.close()
      await onServer(server, `drop database if exists ${name} with (force)`)
    },
  }
}

/**
 * A new DATA_DIR for a service process a test starts, in the temporary directory. With `pglite`
 * (the process will not be given a DATABASE_URL) its embedded database is there already,
 * migrated, a copy of the template: the process starts seconds sooner than on an empty folder,
 * where it would run initdb and every migration first (test/db/migrate.test.ts starts so).
 */
export async function newDataDir(prefix: string, { pglite }: { pglite: boolean }): Promise<string> {
  const dataDir = mkdtempSync(path.join(tmpdir(), prefix))
  if (pglite) {
    const engine = await PGlite.create({ dataDir: path.join(dataDir, 'pglite'), loadDataDir: await pgliteTemplate() })
    await engine.close()
  }
  return dataDir
}

/** Creates an empty database on the server (not migrated), for tests of migration itself. */
export async function emptyServerDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `mls_test_${randomBytes(6).toString('hex')}`
  await onServer(serverUrl!, `create database ${name}`)
  const url = new URL(serverUrl!)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => onServer(serverUrl!, `drop database if exists ${name} with (force)`) }
}

/**
 * What a migrated database holds depends on the migrations, the shipped reference data, the
 * code that applies them, the code that makes the template and the engine: a digest of all of them names the template, so one
 * made before any of them changed is never used. Templates are kept for the next run (a file
 * in the temporary directory for PGlite, a database `mls_template_<digest>` on PostgreSQL).
 * One left over after a change is never read again: whoever makes a new template removes the
 * others made more than `STALE_TEMPLATE_MS` before (removeStaleTemplateFiles,
 * removeStaleTemplateDatabases).
 */
const migratedTemplateKey = (() => {
  const hash = createHash('sha256')
  const addFolder = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true, recursive: true }).sort(
      (a, b) => a.parentPath.localeCompare(b.parentPath) || a.name.localeCompare(b.name),
    )) {
      if (!entry.isFile()) continue
      const file = path.join(entry.parentPath, entry.name)
      hash.update(path.relative(codeRoot, file)).update(readFileSync(file))
    }
  }
  addFolder(migrationsFolder)
  addFolder(path.join(codeRoot, 'src/db/seed'))
  hash.update(readFileSync(codeFile('src/db/migrate')))
  // This module too: how a template is made (pgliteTemplate) is part of what it holds.
  hash.update(readFileSync(codeFile('test/helpers/database')))
  const require = createRequire(import.meta.url)
  for (const dependency of ['@electric-sql/pglite', 'drizzle-orm']) hash.update(`${dependency}@${packageVersion(require.resolve(dependency))}`)
  return hash.digest('hex').slice(0, 16)
})()

/**
 * How old another digest's template must be to be removed. Not at once: a run of another
 * checkout on the same machine (CI of another commit) may still be copying it.
 */
const STALE_TEMPLATE_MS = 24 * 60 * 60 * 1000

/** The version in the package.json above a module's entry point. */
function packageVersion(entry: string): string {
  for (let folder = path.dirname(entry); folder !== path.dirname(folder); folder = path.dirname(folder)) {
    try {
      return (JSON.parse(readFileSync(path.join(folder, 'package.json'), 'utf8')) as { version?: string }).version ?? 'none'
    } catch {
      // No package.json here: look further up.
    }
  }
  return 'none'
}

/**
 * A dump PGlite reads as it reads any Blob, by `arrayBuffer()`, answered with the bytes already
 * in memory, the same for every database a test file opens: Node's own Blob reads one of this
 * size (27 MB) several times slower, and a copy each time cost a fifth of opening a database.
 * PGlite only reads it, copying each file into its own file system.
 */
class TemplateDump extends Blob {
  readonly #contents: ArrayBuffer
  constructor(contents: Uint8Array) {
    super([contents])
    // A buffer of exactly these bytes (a Buffer's may be a slice of a larger, shared one).
    this.#contents = new Uint8Array(contents).buffer
  }
  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.#contents)
  }
}

let pgliteTemplateDump: Promise<Blob> | undefined

/** A migrated PGlite data directory, dumped: from the file an earlier process left, or made now. */
function pgliteTemplate(): Promise<Blob> {
  pgliteTemplateDump ??= (async () => {
    const file = path.join(tmpdir(), `${PGLITE_TEMPLATE_PREFIX}${migratedTemplateKey}.tar`)
    try {
      return new TemplateDump(await readFile(file))
    } catch {
      // Not made yet (or removed): made below.
    }
    // Dumping needs the engine itself, which a DatabaseHandle keeps to itself: this one is
    // opened the way openDatabase opens it, and given to migrateDatabase as a handle.
    const engine = await PGlite.create()
    try {
      const db = drizzle(engine, { schema }) as unknown as Database
      await migrateDatabase({ kind: 'pglite', db, withSession: (work) => work(db) } as Pick<DatabaseHandle, 'kind' | 'db' | 'withSession'> as DatabaseHandle)
      // The service uses the database `postgres` alone: without the two templates initdb makes,
      // a third of the dump, every copy costs a third less to load.
      await engine.exec(`update pg_database set datistemplate = false where datname in ('template0', 'template1')`)
      await engine.exec('drop database template0')
      await engine.exec('drop database template1')
      const dump = new Uint8Array(await (await engine.dumpDataDir('none')).arrayBuffer())
      // Written whole under another name, then renamed: a process reading it meanwhile never sees half.
      const partial = `${file}.${process.pid}.partial`
      try {
        writeFileSync(partial, dump)
        renameSync(partial, file)
      } finally {
        rmSync(partial, { force: true })
      }
      removeStaleTemplateFiles()
      return new TemplateDump(dump)
    } finally {
      await engine.close()
    }
  })()
  return pgliteTemplateDump
}

const PGLITE_TEMPLATE_PREFIX = 'mls-test-pglite-'

/**
 * Removes the PGlite templates of other digests, and the halves of any a crashed process left,
 * last written more than STALE_TEMPLATE_MS ago. Another process may remove one first.
 */
function removeStaleTemplateFiles(): void {
  const own = `${PGLITE_TEMPLATE_PREFIX}${migratedTemplateKey}.tar`
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(PGLITE_TEMPLATE_PREFIX) || name === own) continue
    const file = path.join(tmpdir(), name)
    try {
      if (Date.now() - statSync(file).mtimeMs > STALE_TEMPLATE_MS) rmSync(file, { force: true })
    } catch {
      // Removed meanwhile, or not ours to remove: nothing to do.
    }
  }
}

/**
 * The name of the migrated template database on the server, made by the first process that
 * needs it. Others wait on an advisory lock meanwhile; it is built under another name and
 * renamed when complete, so a crash halfway leaves nothing that passes for it. It takes no
 * connections, so copying it is never refused for someone being connected to it.
 */
async function serverTemplate(server: string): Promise<string> {
  const template = `mls_template_${migratedTemplateKey}`
  const client = new pg.Client({ connectionString: server })
  await client.connect()
  try {
    const exists = async () => (await client.query('select 1 from pg_database where datname = $1', [template])).rowCount === 1
    if (await exists()) return template
    await client.query('select pg_advisory_lock($1)', [TEMPLATE_LOCK_ID])
    try {
      if (await exists()) return template
      const building = `${template}_building`
      // Left by a builder that did not finish, perhaps already marked a template, which cannot be dropped.
      if ((await client.query('select 1 from pg_database where datname = $1', [building])).rowCount === 1) {
        await client.query(`alter database ${building} with is_template false`)
        await client.query(`drop database ${building} with (force)`)
      }
      await client.query(`create database ${building}`)
      const url = new URL(server)
      url.pathname = `/${building}`
      const handle = await openDatabase({ databaseUrl: url.toString(), pgliteDir: undefined, poolSize: 1, pipelinedConnections: 1 })
      try {
        await migrateDatabase(handle)
      } finally {
        await handle.close()
      }
      await client.query(`alter database ${building} with is_template true allow_connections false`)
      await client.query(`alter database ${building} rename to ${template}`)
      await removeStaleTemplateDatabases(client, template)
      return template
    } finally {
      await client.query('select pg_advisory_unlock($1)', [TEMPLATE_LOCK_ID])
    }
  } finally {
    await client.end()
  }
}

/**
 * Drops the template databases of other digests created more than STALE_TEMPLATE_MS ago, under
 * the builders' advisory lock. A database's creation time is that of its `PG_VERSION` file,
 * which only a superuser (or pg_read_server_files) may read: without that right, none is dropped.
 */
async function removeStaleTemplateDatabases(client: pg.Client, own: string): Promise<void> {
  const stale = await client
    .query<{ datname: string }>(
      `select datname from pg_database
        where datname like 'mls\\_template\\_%' and datname <> $1
          and (pg_stat_file('base/' || oid || '/PG_VERSION')).modification < now() - make_interval(secs => $2)`,
      [own, STALE_TEMPLATE_MS / 1000],
    )
    .then(({ rows }) => rows)
    .catch(() => [])
  for (const { datname } of stale) {
    await client.query(`alter database "${datname}" with is_template false`)
    await client.query(`drop database "${datname}" with (force)`)
  }
}

/** Names the advisory lock under which a template database is built: any number unique to that. */
const TEMPLATE_LOCK_ID = 0x6d6c7374 // "mlst"

/**
 * `create database … template …`. PostgreSQL refuses while another session is connected to the
 * template: nobody may connect to ours, but an autovacuum worker may be at work on it for a
 * moment; that refusal is retried until the template is free.
 */
async function createDatabaseFrom(server: string, name: string, template: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await onServer(server, `create database ${name} template ${template}`)
      return
    } catch (error) {
      const inUse = (error as { code?: string }).code === '55006'
      if (!inUse || attempt >= 50) throw error
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

async function onServer(server: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: server })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}
