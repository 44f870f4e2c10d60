import { parseArgs } from 'node:util'
import { isOneLine, NOT_ONE_LINE_MESSAGE } from '../lib/schemas.js'
import { trimmedText } from '../lib/text.js'
import { MAX_REJECT_REASON_LENGTH } from '../modules/tenants/tenants.schemas.js'
import type { TenantsService } from '../modules/tenants/tenants.service.js'

/**
 * The operator's command line (`npm run admin -- …`), read and checked whole before anything is
 * opened: a mistyped line, or a value the /admin routes would refuse, is answered at once.
 */

export const ADMIN_USAGE = `Operator commands (the same service code as the /admin routes, straight on the database):

  npm run admin -- registrations list [--status pending|approved|rejected] [--limit N] [--offset N]
  npm run admin -- registrations approve <request_code>
  npm run admin -- registrations reject <request_code> --reason "why"
  npm run admin -- tenants show|suspend|unsuspend <tenant_id>
  npm run admin -- api-keys list <tenant_id> [--limit N] [--offset N]
  npm run admin -- api-keys create <tenant_id> [--name "label"] [--expires-in-days N]
  npm run admin -- api-keys revoke <tenant_id> <key_id>

With the embedded database (no DATABASE_URL) stop the running service first: PGlite allows
one process at a time. With PostgreSQL it can run beside the service, and a revocation or a
suspension takes effect on the running API processes within a second.`

/** A line that is no command: said on stderr, then the usage, exit code 2. */
export class UsageError extends Error {}

/** What a command does, given the tenants service on the configured database. */
export type AdminCommand = (tenants: TenantsService) => Promise<unknown>

/** The line asks for the usage (`--help`: exit code 0), or names no command (exit code 2). */
export const HELP = Symbol('help')
export const NO_COMMAND = Symbol('no command')

const options = {
  status: { type: 'string' },
  reason: { type: 'string' },
  name: { type: 'string' },
  'expires-in-days': { type: 'string' },
  limit: { type: 'string', default: '50' },
  offset: { type: 'string', default: '0' },
  help: { type: 'boolean', short: 'h' },
} as const

type OptionName = Exclude<keyof typeof options, 'help'>

/** Each command: the words it takes on the line, its own two included, and the options it takes. */
const commands: Record<string, { words: number; options: OptionName[] }> = {
  'registrations list': { words: 2, options: ['status', 'limit', 'offset'] },
  'registrations approve': { words: 3, options: [] },
  'registrations reject': { words: 3, options: ['reason'] },
  'tenants show': { words: 3, options: [] },
  'tenants suspend': { words: 3, options: [] },
  'tenants unsuspend': { words: 3, options: [] },
  'api-keys list': { words: 3, options: ['limit', 'offset'] },
  'api-keys create': { words: 3, options: ['name', 'expires-in-days'] },
  'api-keys revoke': { words: 4, options: [] },
}

/** An id of the database's integer columns. */
const MAX_ID = 2_147_483_647

/**
 * The command `args` (the words after `npm run admin --`) ask for, its values checked; HELP or
 * NO_COMMAND for the usage. A line that is no command throws a UsageError, a value the routes would refuse an
 * Error naming it.
 */
export function adminCommand(args: string[]): AdminCommand | typeof HELP | typeof NO_COMMAND {
  let parsed
  try {
    parsed = parseArgs({ args, allowPositionals: true, options, tokens: true })
  } catch (error) {
    // An unknown option, or one without its value.
    throw new UsageError((error as Error).message)
  }
  const { values, positionals, tokens } = parsed
  if (values.help) return HELP
  if (positionals.length === 0) return NO_COMMAND
  /** The options written on the line (`values` holds the defaults too), each as often as written. */
  const writtenOptions = tokens.flatMap((token) => (token.kind === 'option' && token.name !== 'help' ? [token.name] : []))
  const givenOptions = new Set(writtenOptions)
  const [resource, action, target, keyId] = positionals

  const name = positionals.slice(0, 2).join(' ')
  const command = Object.hasOwn(commands, name) ? commands[name]! : undefined
  if (command === undefined) throw new UsageError(`Unknown command: ${name}.`)
  // An argument or an option too many is refused, never ignored: `tenants suspend 1 2` must not
  // suspend 1 alone, nor `registrations approve <code> --reason …` approve what was meant to be rejected.
  const { words } = command
  const taken = ['no argument', 'one argument', 'two arguments'][words - 2]
  if (positionals.length > words) throw new UsageError(`${name} takes ${taken}; not: ${positionals.slice(words).join(' ')}.`)
  if (positionals.length < words) throw new UsageError(`${name} takes ${taken}.`)
  // The last of two would win, silently: `--expires-in-days 1 --expires-in-days 3650` is no line to guess at.
  const repeated = [...givenOptions].filter((option) => writtenOptions.indexOf(option) !== writtenOptions.lastIndexOf(option))
  if (repeated.length > 0) throw new UsageError(`Each option is given once; given more than once: ${repeated.map((option) => `--${option}`).join(', ')}.`)
  const foreign = [...givenOptions].filter((option) => !(command.options as string[]).includes(option))
  if (foreign.length > 0) {
    const takes = command.options.length === 0 ? 'no option' : command.options.map((option) => `--${option}`).join(', ')
    throw new UsageError(`${name} takes ${takes}; not: ${foreign.map((option) => `--${option}`).join(', ')}.`)
  }

  /** `--limit` and `--offset`, bounded as the admin routes bound them (1 to 100, from 0). */
  const page = () => ({ limit: wholeNumber(values.limit, '--limit', 1, 100), offset: wholeNumber(values.offset, '--offset', 0, Number.MAX_SAFE_INTEGER) })

  if (resource === 'tenants') {
    const tenantId = wholeNumber(target, 'The tenant id', 1, MAX_ID)
    if (action === 'suspend') return (tenants) => tenants.suspend(tenantId)
    if (action === 'unsuspend') return (tenants) => tenants.unsuspend(tenantId)
    return (tenants) => tenants.tenant(tenantId)
  }
  if (resource === 'api-keys') {
    const tenantId = wholeNumber(target, 'The tenant id', 1, MAX_ID)
    switch (action) {
      case 'list': {
        const query = page()
        return (tenants) => tenants.listKeysOfTenant(tenantId, query)
      }
      case 'create': {
        const days = values['expires-in-days']
        const expiresInDays = days === undefined ? undefined : wholeNumber(days, '--expires-in-days', 1, 3650)
        const keyName = values.name
        // Counted as the route counts it: characters, not UTF-16 units, blanks at the ends included.
        if (keyName !== undefined && [...keyName].length > 100) throw new Error('--name must be at most 100 characters')
        if (keyName !== undefined && !isOneLine(keyName)) throw new Error(`--name ${NOT_ONE_LINE_MESSAGE}`)
        if (keyName !== undefined && trimmedText(keyName) === '') throw new Error('--name must not be blank')
        return (tenants) => tenants.createKey(tenantId, { name: keyName, expires_in_days: expiresInDays })
      }
      default: {
        const id = wholeNumber(keyId, 'The key id', 1, MAX_ID)
        return (tenants) => tenants.revokeKey(tenantId, id)
      }
    }
  }
  const requestCode = target
  if (action !== 'list' && !requestCode) throw new UsageError(`registrations ${action} takes a request code.`)
  switch (action) {
    case 'list': {
      const status = values.status
      if (status !== undefined && !['pending', 'approved', 'rejected'].includes(status)) {
        throw new Error('--status must be pending, approved or rejected')
      }
      const query = { status: status as 'pending' | 'approved' | 'rejected' | undefined, ...page() }
      return (tenants) => tenants.list(query)
    }
    case 'approve':
      return (tenants) => tenants.approve(requestCode!)
    default: {
      // As the route: a rejection says why, in at most its 2,000 characters; blank with invisible characters is blank.
      const reason = trimmedText(values.reason ?? '')
      if (!reason) throw new UsageError('registrations reject takes --reason "why": a rejection says why, and it may not be blank.')
      if ([...values.reason!].length > MAX_REJECT_REASON_LENGTH) throw new Error(`--reason must be at most ${MAX_REJECT_REASON_LENGTH} characters`)
      return (tenants) => tenants.reject(requestCode!, reason)
    }
  }
}

/** A whole number from `minimum` to `maximum` given on the command line, or an error naming what it is, as the routes' 422 would. */
function wholeNumber(text: string | undefined, what: string, minimum: number, maximum: number): number {
  const value = Number(text)
  if (!text || !/^\d+$/.test(text) || !(value >= minimum && value <= maximum)) throw new Error(`${what} must be a whole number from ${minimum} to ${maximum}`)
  return value
}
