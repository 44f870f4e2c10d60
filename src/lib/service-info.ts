import { readFileSync } from 'node:fs'

/** The service's name and version, as GET / and the OpenAPI document state them. */
export const SERVICE_NAME = 'Open MLS'
/** The package's version: one number to raise at a release, read from package.json beside src/ (or dist/). */
export const SERVICE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
