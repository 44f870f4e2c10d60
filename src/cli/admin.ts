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

With the embedded database (no DATABASE_URL) stop the running service first: PGlite allows
one process at a time. With PostgreSQL it can run beside the service.`

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    status: { type: 'string' },
    reason: { type: 'string' },
    limit: { type: 'string', default: '50' },
    offset: { type: 'string', default: '0' },
    help: { type: 'boolean', short: 'h' },
  },
})

const [resource, action, requestCode] = positionals

async function run(tenants: TenantsService): Promise<unknown> {
  if (resource !== 'registrations') return undefined
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

if (values.help || resource !== 'registrations' || !['list', 'approve', 'reject'].includes(action ?? '')) {
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
