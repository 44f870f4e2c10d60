import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The tree this test's code was loaded from: the repository, its TypeScript run through tsx, or
 * `.test-build/`, the same code transpiled by `npm test` (scripts/build-tests.ts).
 */
export const codeRoot = fileURLToPath(new URL('../..', import.meta.url))
const transpiled = import.meta.url.endsWith('.js')

/** A module of that tree by its path without extension (`src/db/migrate`), as a file name. */
export function codeFile(module: string): string {
  return path.join(codeRoot, `${module}.${transpiled ? 'js' : 'ts'}`)
}

/** node's options that load this tree's code the way this test loads its own. */
export const codeLoaderArguments = transpiled ? ['--enable-source-maps'] : ['--import', 'tsx']

/** node's arguments to run the entry point `module` (`src/server`, say) the way this test runs its own code. */
export function nodeArguments(module: string): string[] {
  return [...codeLoaderArguments, codeFile(module)]
}
