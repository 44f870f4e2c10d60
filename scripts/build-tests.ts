/**
 * Builds what `npm test` runs: the service, the tests and the client, transpiled to plain
 * JavaScript under `.test-build/`, the repository's layout kept. Each test file is a process of
 * its own, and loading the app from TypeScript through tsx's loader hooks costs every one of
 * them (and every service process a test starts) about 1.2 s more, 1.8 s of CPU, than loading
 * the same code as JavaScript. esbuild is the transpiler tsx itself uses, so the code that runs
 * is the same; the types are checked by `npm run typecheck`, not here.
 *
 * Alongside the code: the migrations and package.json, which the service reads beside its
 * sources, the tests' fixtures, and the client as the installed package the tests import
 * (`node_modules/@open-mls/client`, found from the tests before the workspace's link to the
 * unbuilt package).
 */
import { cpSync, rmSync } from 'node:fs'
import path from 'node:path'
import { build, type BuildOptions } from 'esbuild'

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
