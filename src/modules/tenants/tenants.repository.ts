import { and, desc, eq, isNull, sql } from 'drizzle-orm'
import type { CountryCode } from 'libphonenumber-js'
import type { Database } from '../../db/client.js'
import { rowsWithTotal } from '../../db/paging.js'
import { apiKeys, registrationRequests, tenants, type RegistrationStatus } from '../../db/schema.js'
import type { AuthenticatedTenant } from './authenticated-tenant.js'

export type RegistrationRequestRow = typeof registrationRequests.$inferSelect
export type TenantRow = typeof tenants.$inferSelect
export type NewRegistrationRequest = typeof registrationRequests.$inferInsert

export async function findTenantByKeyDigest(db: Database, digest: string): Promise<AuthenticatedTenant | undefined> {
  const [row] = await db
    .select({ id: tenants.id, companyName: tenants.companyName, country: tenants.country })
    .from(apiKeys)
    .innerJoin(tenants, eq(tenants.id, apiKeys.tenantId))
    .where(and(eq(apiKeys.digest, digest), isNull(apiKeys.revokedAt)))
    .limit(1)
  return row && { ...row, country: row.country as CountryCode }
}

export async function findTenant(db: Database, tenantId: number): Promise<TenantRow | undefined> {
  const [row] = await db.select().from(tenants).where(eq(tenants.id, tenantId))
  return row
}

export async function insertRegistrationRequest(db: Database, values: NewRegistrationRequest): Promise<RegistrationRequestRow> {
  const [row] = await db.insert(registrationRequests).values(values).returning()
  return row!
}

/**
 * The request with this code *and* this e-mail (compared case-insensitively), in one query,
 * so an unknown code and a wrong e-mail take the same path and give the same answer.
 */
export async function findRegistrationRequestForApplicant(db: Database, requestCode: string, email: string): Promise<RegistrationRequestRow | undefined> {
  const [row] = await db
    .select()
    .from(registrationRequests)
    .where(and(eq(registrationRequests.requestCode, requestCode), eq(sql`lower(${registrationRequests.email})`, email.toLowerCase())))
  return row
}

/** Locks the request row for a decision, so two admins cannot approve it twice. */
export async function lockRegistrationRequest(db: Database, requestCode: string): Promise<RegistrationRequestRow | undefined> {
  const [row] = await db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, requestCode)).for('update')
  return row
}

export function listRegistrationRequests(
  db: Database,
  filter: { status?: RegistrationStatus | undefined; limit: number; offset: number },
): Promise<{ rows: RegistrationRequestRow[]; total: number }> {
  const where = filter.status ? eq(registrationRequests.status, filter.status) : undefined
  const rows = db
    .select()
    .from(registrationRequests)
    .where(where)
    .orderBy(desc(registrationRequests.createdAt), desc(registrationRequests.id))
    .limit(filter.limit)
    .offset(filter.offset)
  return rowsWithTotal(db, rows, registrationRequests, where)
}

export async function insertTenant(db: Database, values: typeof tenants.$inferInsert): Promise<TenantRow> {
  const [row] = await db.insert(tenants).values(values).returning()
  return row!
}

export async function insertApiKey(db: Database, values: typeof apiKeys.$inferInsert): Promise<void> {
  await db.insert(apiKeys).values(values)
}

export async function decideRegistrationRequest(
  db: Database,
  id: number,
  decision: Pick<RegistrationRequestRow, 'status' | 'tenantId' | 'apiKeyEncrypted' | 'rejectReason'>,
): Promise<RegistrationRequestRow> {
  const [row] = await db
    .update(registrationRequests)
    .set({ ...decision, decidedAt: new Date() })
    .where(eq(registrationRequests.id, id))
    .returning()
  return row!
}
