import { domainToASCII } from 'node:url'
import { and, count, desc, eq, gt, isNull, or, sql, type SQL } from 'drizzle-orm'
import type { CountryCode } from 'libphonenumber-js'
import type { Database } from '../../db/client.js'
import { rowsWithTotal } from '../../db/paging.js'
import { apiKeys, registrationRequests, tenants, type RegistrationStatus } from '../../db/schema.js'
import type { AuthenticatedTenant } from './authenticated-tenant.js'

export type RegistrationRequestRow = typeof registrationRequests.$inferSelect
export type TenantRow = typeof tenants.$inferSelect
export type NewRegistrationRequest = typeof registrationRequests.$inferInsert
export type ApiKeyRow = typeof apiKeys.$inferSelect

/** A key that authenticates: neither revoked nor expired. */
const isActiveKey: SQL = and(isNull(apiKeys.revokedAt), or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, sql`now()`)))!

/** The key with this digest, if it is active and its agency is not suspended, with the agency. */
export async function findActiveKeyByDigest(
  db: Database,
  digest: string,
): Promise<{ keyId: number; expiresAt: Date | null; tenant: AuthenticatedTenant } | undefined> {
  const [row] = await db
    .select({
      keyId: apiKeys.id,
      expiresAt: apiKeys.expiresAt,
      tenant: { id: tenants.id, companyName: tenants.companyName, country: tenants.country },
    })
    .from(apiKeys)
    .innerJoin(tenants, eq(tenants.id, apiKeys.tenantId))
    .where(and(eq(apiKeys.digest, digest), isActiveKey, isNull(tenants.suspendedAt)))
    .limit(1)
  return row && { ...row, tenant: { ...row.tenant, country: row.tenant.country as CountryCode } }
}

/** Whether the key with this digest is active (its agency suspended or not). */
export async function isKeyActive(db: Database, digest: string): Promise<boolean> {
  const [row] = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.digest, digest), isActiveKey))
  return row !== undefined
}

/**
 * Records that a key was used, unless that was recorded less than a minute ago (by this
 * process or another), so most uses write nothing.
 */
export async function recordKeyUse(db: Database, keyId: number): Promise<void> {
  await db
    .update(apiKeys)
    .set({ lastUsedAt: sql`now()` })
    .where(and(eq(apiKeys.id, keyId), or(isNull(apiKeys.lastUsedAt), sql`${apiKeys.lastUsedAt} < now() - interval '1 minute'`)))
}

/** An agency's keys, newest first, revoked and expired ones too (api_keys_tenant_idx). */
export function listApiKeys(db: Database, tenantId: number, page: { limit: number; offset: number }): Promise<{ rows: ApiKeyRow[]; total: number }> {
  const where = eq(apiKeys.tenantId, tenantId)
  const rows = db.select().from(apiKeys).where(where).orderBy(desc(apiKeys.id)).limit(page.limit).offset(page.offset)
  return rowsWithTotal(db, rows, apiKeys, where)
}

/** One key of one agency; another agency's id finds nothing. */
export async function findApiKey(db: Database, tenantId: number, id: number): Promise<ApiKeyRow | undefined> {
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, id)))
  return row
}

/**
 * Locks the agency's row until the transaction ends: changes to its keys (the cap on active
 * keys, never revoking the last one) and its suspension happen one after the other, and a
 * suspension waits for the internal check's transactions that hold the row (lockActiveTenants).
 * No key update: rows that merely refer to the agency are not held up.
 */
export async function lockTenant(tx: Database, tenantId: number): Promise<TenantRow | undefined> {
  const [row] = await tx.select().from(tenants).where(eq(tenants.id, tenantId)).for('no key update')
  return row
}

export async function countActiveKeys(db: Database, tenantId: number): Promise<number> {
  const [row] = await db
    .select({ keys: count() })
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, tenantId), isActiveKey))
  return row?.keys ?? 0
}

/** Whether this key of the agency is active now, as the database's clock says. */
export async function isActiveKeyOf(db: Database, tenantId: number, id: number): Promise<boolean> {
  const [row] = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, id), isActiveKey))
  return row !== undefined
}

/** Revokes one key of one agency; a key revoked already keeps its first revocation time. */
export async function revokeApiKey(db: Database, tenantId: number, id: number): Promise<ApiKeyRow | undefined> {
  const [row] = await db
    .update(apiKeys)
    .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` })
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, id)))
    .returning()
  return row
}

/** Sets or clears the agency's suspension; a second suspension keeps the first one's time. */
export async function setSuspended(db: Database, tenantId: number, suspended: boolean): Promise<TenantRow | undefined> {
  const [row] = await db
    .update(tenants)
    .set(suspended ? { suspendedAt: sql`coalesce(${tenants.suspendedAt}, now())` } : { suspendedAt: null, unsuspendedAt: sql`now()` })
    .where(eq(tenants.id, tenantId))
    .returning()
  return row
}

/**
 * Tells every API process listening on `channel` (see TenantsService) what to forget, when the
 * transaction commits; nothing if it rolls back.
 */
export async function notify(tx: Database, channel: string, payload: string): Promise<void> {
  await tx.execute(sql`select pg_notify(${channel}, ${payload})`)
}

/** Of these agencies, those not suspended, locked against a suspension until the transaction ends. */
export async function lockActiveTenants(tx: Database, tenantIds: readonly number[]): Promise<Set<number>> {
  if (tenantIds.length === 0) return new Set()
  const rows = await tx
    .select({ id: tenants.id })
    .from(tenants)
    .where(and(sql`${tenants.id} = any(${`{${tenantIds.join(',')}}`}::int[])`, isNull(tenants.suspendedAt)))
    .for('share')
  return new Set(rows.map((row) => row.id))
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
 * The request with this code *and* this e-mail (compared case-insensitively, in any script:
 * here rather than with SQL's lower(), which under the C collation, PGlite's, folds only ASCII
 * letters; the domains in their ASCII form, so `ＡＧＥＮＣＹ.example` is `agency.example`), so an
 * unknown code and a wrong e-mail give the same answer.
 */
export async function findRegistrationRequestForApplicant(db: Database, requestCode: string, email: string): Promise<RegistrationRequestRow | undefined> {
  const [row] = await db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, requestCode))
  return row && comparableEmail(row.email) === comparableEmail(email) ? row : undefined
}

function comparableEmail(email: string): string {
  const at = email.lastIndexOf('@')
  return `${email.slice(0, at + 1).toLowerCase()}${domainToASCII(email.slice(at + 1)) || email.slice(at + 1).toLowerCase()}`
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

/** Inserts a key; with `expiresInDays` it expires that many days from now, by the database's clock. */
export async function insertApiKey(
  db: Database,
  { expiresInDays, ...values }: Omit<typeof apiKeys.$inferInsert, 'expiresAt'> & { expiresInDays?: number | undefined },
): Promise<ApiKeyRow> {
  const expiresAt = expiresInDays === undefined ? null : sql`now() + ${expiresInDays}::int * interval '1 day'`
  const [row] = await db
    .insert(apiKeys)
    .values({ ...values, expiresAt })
    .returning()
  return row!
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
