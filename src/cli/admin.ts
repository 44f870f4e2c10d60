import { parseArgs } from 'node:util'
import { loadConfig } from '../config.js'
import { migrateDatabase } from '../db/migrate.js'
import { ApiError } from '../lib/errors.js'
import type { TenantsService } from '../modules/tenants/tenants.service.js'
import { openConfiguredDatabase } from '../runtime.js'
import { createServices } from '../services.js'

const usage = `Operator commands (the same service code as the /admin routes, straight on the database):

  npm run admin -- registrations list [--status pending|approved|rejected] [--limit N] [--offset N]
  npm run admin -- registrations approve <request_code>
  npm run admin -- registrations reject <request_code> [--reason "why"]
  npm run admin -- tenants show|suspend|unsuspend <tenant_id>
  npm run admin -- api-keys list <tenant_id> [--limit N] [--offset N]
  npm run admin -- api-keys create <tenant_id> [--name "label"] [--expires-in-days N]
  npm run admin -- api-keys revoke <tenant_id> <key_id>

With the embedded database (no DATABASE_URL) stop the running service first: PGlite allows
one process at a time. With PostgreSQL it can run beside the service, and a revocation or a
suspension takes effect on the running API processes within a second.`

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    status: { type: 'string' },
    reason: { type: 'string' },
    name: { type: 'string' },
    'expires-in-days': { type: 'string' },
    limit: { type: 'string', default: '50' },
    offset: { type: 'string', default: '0' },
    help: { type: 'boolean', short: 'h' },
  },
})

const [resource, action, target, keyId] = positionals

const commands: Record<string, string[]> = {
  registrations: ['list', 'approve', 'reject'],
  tenants: ['show', 'suspend', 'unsuspend'],
  'api-keys': ['list', 'create', 'revoke'],
}

/** A positive whole number given on the command line, or an error naming what it is. */
function positiveInteger(text: string | undefined, what: string): number {
  const value = Number(text)
  if (!text || !/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < 1) throw new Error(`${what} must be a positive whole number`)
  return value
}

async function run(tenants: TenantsService): Promise<unknown> {
  if (resource === 'tenants') return runTenants(tenants)
  if (resource === 'api-keys') return runApiKeys(tenants)
  const requestCode = target
  switch (action) {
    case 'list': {
      const status = values.status
      if (status !== undefined && !['pending', 'approved', 'rejected'].includes(status)) {
        throw new Error('--status must be pending, approved or rejected')
      }
      return tenants.list({
        status: status as 'pending' | 'approved' | 'rejected' | undefined,
        limit: Number(values.limit),
        offset: Number(values.offset),
      })
    }
    case 'approve':
      return requestCode ? tenants.approve(requestCode) : undefined
    case 'reject':
      return requestCode ? tenants.reject(requestCode, values.reason) : undefined
    default:
      return undefined
  }
}

async function runTenants(tenants: TenantsService): Promise<unknown> {
  const tenantId = positiveInteger(target, 'The tenant id')
  if (action === 'suspend') return tenants.suspend(tenantId)
  if (action === 'unsuspend') return tenants.unsuspend(tenantId)
  return tenants.tenant(tenantId)
}

async function runApiKeys(tenants: TenantsService): Promise<unknown> {
  const tenantId = positiveInteger(target, 'The tenant id')
  switch (action) {
    case 'list':
      return tenants.listKeysOfTenant(tenantId, { limit: Number(values.limit), offset: Number(values.offset) })
    case 'create': {
      const days = values['expires-in-days']
      const expiresInDays = days === undefined ? undefined : positiveInteger(days, '--expires-in-days')
      if (expiresInDays !== undefined && expiresInDays > 3650) throw new Error('--expires-in-days must be at most 3650')
      if (values.name !== undefined && values.name.trim().length > 100) throw new Error('--name must be at most 100 characters')
      return tenants.createKey(tenantId, { name: values.name, expires_in_days: expiresInDays })
    }
    default:
      return tenants.revokeKey(tenantId, positiveInteger(keyId, 'The key id'))
  }
}

const known = resource !== undefined && Object.hasOwn(commands, resource) && commands[resource]!.includes(action ?? '')

if (values.help || !known) {
  console.log(usage)
  process.exitCode = values.help ? 0 : 2
} else {
  try {
    const config = loadConfig()
    const database = await openConfiguredDatabase(config)
    try {
      await migrateDatabase(database)
      const services = createServices({ config, database })
      try {
        const result = await run(services.tenants)
        if (result === undefined) {
          console.log(usage)
          process.exitCode = 2
        } else {
          console.log(JSON.stringify(result, null, 2))
        }
      } finally {
        await services.close()
      }
    } finally {
      await database.close()
    }
  } catch (error) {
    console.error(error instanceof ApiError ? error.message : `Failed: ${(error as Error).message}`)
    process.exitCode = 1
  }
}
