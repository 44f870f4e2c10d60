import { LRUCache } from 'lru-cache'
import type { Database } from '../../db/client.js'
import { ApiError } from '../../lib/errors.js'
import { isSupportedCountry, normalisePhone } from '../../lib/phone.js'
import { digestSecret, generateApiKey, generateRequestCode, type SecretBox } from '../../lib/secrets.js'
import { toOffsetTimestamp } from '../../lib/time.js'
import type { AuthenticatedTenant } from './authenticated-tenant.js'
import * as repository from './tenants.repository.js'
import type { RegistrationRequestRow } from './tenants.repository.js'
import type { AdminRegistration, RegistrationCreateBody, RegistrationStatus } from './tenants.schemas.js'

export type { AuthenticatedTenant } from './authenticated-tenant.js'

export const REGISTRATION_NOT_FOUND = 'Registration request not found'
/** How long a process trusts a key it has looked up; a revoked key works that long at most. */
export const KEY_CACHE_TTL_MS = 10_000

/**
 * Registration, approval, the agencies and their API keys. Shared by the HTTP routes and the
 * admin CLI; the only writer of tenants, registration requests and API keys.
 */
export class TenantsService {
  // Known keys are remembered briefly, sparing a query on every authenticated request.
  private readonly knownKeys = new LRUCache<string, AuthenticatedTenant>({ max: 10_000, ttl: KEY_CACHE_TTL_MS })

  constructor(
    private readonly db: Database,
    private readonly secrets: SecretBox,
  ) {}

  /** The agency whose API key this is, or undefined for a key that is unknown or revoked. */
  async authenticate(apiKey: string): Promise<AuthenticatedTenant | undefined> {
    const digest = digestSecret(apiKey)
    const known = this.knownKeys.get(digest)
    if (known) return known
    const tenant = await repository.findTenantByKeyDigest(this.db, digest)
    if (tenant) this.knownKeys.set(digest, tenant)
    return tenant
  }

  async register(input: RegistrationCreateBody) {
    const country = input.country ?? 'RU'
    if (!isSupportedCountry(country)) {
      throw ApiError.validation([{ loc: ['body', 'country'], msg: `"${country}" is not an ISO 3166-1 alpha-2 country code we know` }])
    }
    let phone: string | null = null
    if (input.phone !== undefined) {
      phone = normalisePhone(input.phone, country)
      if (!phone) throw ApiError.validation([{ loc: ['body', 'phone'], msg: `is not a valid phone number for ${country}` }])
    }
    const row = await repository.insertRegistrationRequest(this.db, {
      requestCode: generateRequestCode(),
      companyName: input.company_name.trim(),
      email: input.email.trim(),
      country,
      contactName: input.contact_name?.trim() ?? null,
      phone,
    })
    return { request_code: row.requestCode, status: 'pending' as const, created_at: toOffsetTimestamp(row.createdAt) }
  }

  /** The applicant's view of a request: an unknown code and a wrong e-mail are the same 404. */
  async statusForApplicant(requestCode: string, email: string): Promise<RegistrationStatus> {
    const row = await repository.findRegistrationRequestForApplicant(this.db, requestCode, email.trim())
    if (!row) throw ApiError.notFound(REGISTRATION_NOT_FOUND)
    return this.statusOf(row)
  }

  async list(filter: Parameters<typeof repository.listRegistrationRequests>[1]) {
    const { rows, total } = await repository.listRegistrationRequests(this.db, filter)
    return { items: rows.map(toAdminRegistration), total, limit: filter.limit, offset: filter.offset }
  }

  /** Creates the tenant and its first API key; the request row is locked so this happens once. */
  async approve(requestCode: string): Promise<RegistrationStatus> {
    const approved = await this.db.transaction(async (tx) => {
      const request = await this.pendingRequest(tx, requestCode)
      const tenant = await repository.insertTenant(tx, {
        companyName: request.companyName,
        email: request.email,
        country: request.country,
        contactName: request.contactName,
        phone: request.phone,
      })
      const apiKey = generateApiKey()
      await repository.insertApiKey(tx, {
        tenantId: tenant.id,
        displayPrefix: apiKey.slice(0, 13),
        digest: digestSecret(apiKey),
      })
      return repository.decideRegistrationRequest(tx, request.id, {
        status: 'approved',
        tenantId: tenant.id,
        apiKeyEncrypted: this.secrets.seal(apiKey),
        rejectReason: null,
      })
    })
    return this.statusOf(approved)
  }

  async reject(requestCode: string, reason: string | undefined): Promise<RegistrationStatus> {
    const rejected = await this.db.transaction(async (tx) => {
      const request = await this.pendingRequest(tx, requestCode)
      return repository.decideRegistrationRequest(tx, request.id, {
        status: 'rejected',
        tenantId: null,
        apiKeyEncrypted: null,
        rejectReason: reason?.trim() ?? null,
      })
    })
    return this.statusOf(rejected)
  }

  async me(tenantId: number) {
    const tenant = await repository.findTenant(this.db, tenantId)
    if (!tenant) throw ApiError.notFound('Tenant not found')
    return {
      tenant_id: tenant.id,
      company_name: tenant.companyName,
      email: tenant.email,
      country: tenant.country,
      created_at: toOffsetTimestamp(tenant.createdAt),
    }
  }

  private async pendingRequest(tx: Database, requestCode: string): Promise<RegistrationRequestRow> {
    const request = await repository.lockRegistrationRequest(tx, requestCode)
    if (!request) throw ApiError.notFound(REGISTRATION_NOT_FOUND)
    if (request.status !== 'pending') {
      throw ApiError.conflict(`Registration request is already ${request.status}; only a pending request can be decided.`)
    }
    return request
  }

  private statusOf(row: RegistrationRequestRow): RegistrationStatus {
    if (row.status !== 'approved') return { request_code: row.requestCode, status: row.status }
    return {
      request_code: row.requestCode,
      status: 'approved',
      tenant_id: row.tenantId!,
      api_key: this.secrets.open(row.apiKeyEncrypted!),
    }
  }
}

function toAdminRegistration(row: RegistrationRequestRow): AdminRegistration {
  return {
    request_code: row.requestCode,
    status: row.status,
    company_name: row.companyName,
    email: row.email,
    country: row.country,
    contact_name: row.contactName,
    phone: row.phone,
    tenant_id: row.tenantId,
    reject_reason: row.rejectReason,
    created_at: toOffsetTimestamp(row.createdAt),
    decided_at: row.decidedAt && toOffsetTimestamp(row.decidedAt),
  }
}
