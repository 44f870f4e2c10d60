import { LRUCache } from 'lru-cache'
import type { Database } from '../../db/client.js'
import { retryingConflicts } from '../../db/conflicts.js'
import { ApiError, REGISTRATION_NOT_FOUND, TENANT_NOT_FOUND, API_KEY_NOT_FOUND, INVALID_API_KEY } from '../../lib/errors.js'
import { isSupportedCountry, normalisePhone } from '../../lib/phone.js'
import { trimmedText } from '../../lib/text.js'
import { digestSecret, generateApiKey, generateRequestCode, type SecretBox } from '../../lib/secrets.js'
import { toOffsetTimestamp } from '../../lib/time.js'
import type { AuthenticatedTenant } from './authenticated-tenant.js'
import * as repository from './tenants.repository.js'
import type { ApiKeyRow, RegistrationRequestRow, TenantRow } from './tenants.repository.js'
import {
  MAX_ACTIVE_KEYS,
  type AdminRegistration,
  type AdminTenant,
  type ApiKey,
  type ApiKeyCreateBody,
  type CreatedApiKey,
  type RegistrationCreateBody,
  type RegistrationStatus,
} from './tenants.schemas.js'

export type { AuthenticatedTenant } from './authenticated-tenant.js'

/**
 * How long a process trusts a key it has looked up without hearing otherwise. Revocations and
 * suspensions reach every API process at once (see KEY_REVOCATIONS_CHANNEL); this bounds how
 * long a revoked key may still work on a process that missed the notice.
 */
export const KEY_CACHE_TTL_MS = 10_000
/** A key's `last_used_at` is written at most this often. */
export const KEY_USE_RECORD_INTERVAL_MS = 60_000
/**
 * The PostgreSQL channel on which a revocation or a suspension tells every API process which
 * cached keys to forget: `{"key_id": n}` or `{"tenant_id": n}`, sent in the transaction that
 * makes the change, so it arrives when it commits. See docs/architecture.md#api-keys-and-suspension.
 */
export const KEY_REVOCATIONS_CHANNEL = 'mls_api_key_revocations'
/** What a key's `prefix` shows of it: `mls_live_` and four characters. */
const DISPLAY_PREFIX_LENGTH = 13

/** An active API key, as it authenticates a request: which one (its rate limit is counted by it), and whose. */
export interface AuthenticatedKey {
  keyId: number
  tenant: AuthenticatedTenant
}

/**
 * What else changes when an agency is suspended or unsuspended, in the same transaction as its
 * row. The modules that own those rows do it; services.ts wires them in.
 */
export interface SuspensionEffects {
  /** Its published listings leave the catalogue; its pending webhook deliveries are given up. */
  suspended(tx: Database, tenantId: number): Promise<void>
  /** Its listings come back to the catalogue as they were; its webhooks' failing streaks resume where they stopped. */
  unsuspended(tx: Database, tenantId: number, suspendedAt: Date): Promise<void>
}

/**
 * Registration, approval, the agencies, their suspension and their API keys. Shared by the HTTP
 * routes and the admin CLI; the only writer of tenants, registration requests and API keys.
 */
export class TenantsService {
  // Active keys are remembered briefly, sparing a query on every authenticated request.
  private readonly knownKeys = new LRUCache<string, AuthenticatedKey>({ max: 10_000, ttl: KEY_CACHE_TTL_MS })
  /** Keys whose use this process recorded within the last minute. */
  private readonly recordedUses = new LRUCache<number, true>({ max: 10_000, ttl: KEY_USE_RECORD_INTERVAL_MS })
  /**
   * Raised by every eviction. A lookup that started before a revocation committed may answer
   * after the eviction it caused: if an eviction happened meanwhile, what it found is not kept.
   */
  private evictions = 0
  /** Lookups in flight, by key digest, with the evictions count they started at. */
  private readonly lookups = new Map<string, { evictions: number; found: Promise<AuthenticatedKey | undefined> }>()

  constructor(
    private readonly db: Database,
    private readonly secrets: SecretBox,
    private readonly effects: SuspensionEffects,
  ) {}

  /**
   * The agency whose API key this is, or undefined for a key that is unknown, revoked or
   * expired, or whose agency is suspended: all are refused alike. `beforeLookup` runs for each
   * request whose key must be looked up, before it waits for the database (the failure throttle
   * takes its request's point there: what it throws is that request's alone, never that of
   * another request sharing the lookup); a key this process knows needs no lookup.
   */
  async authenticate(apiKey: string, beforeLookup: () => Promise<void> = async () => {}): Promise<AuthenticatedKey | undefined> {
    const digest = digestSecret(apiKey)
    let known = this.knownKeys.get(digest)
    if (!known) {
      await beforeLookup()
      known = await this.lookUp(digest)
    }
    if (!known) return undefined
    this.recordUse(known.keyId)
    return known
  }

  /**
   * A key's agency from the database, by one lookup however many requests bring the key at
   * once (they join the one in flight, unless an eviction came since it started), remembered
   * for KEY_CACHE_TTL_MS unless an eviction came before it answered.
   */
  private lookUp(digest: string): Promise<AuthenticatedKey | undefined> {
    const evictions = this.evictions
    const inFlight = this.lookups.get(digest)
    if (inFlight?.evictions === evictions) return inFlight.found
    const found = (async () => {
      const row = await repository.findActiveKeyByDigest(this.db, digest)
      if (!row) return undefined
      const known = { keyId: row.keyId, tenant: row.tenant }
      // A key that expires sooner than the cache would forget it is forgotten when it expires.
      const ttl = Math.min(KEY_CACHE_TTL_MS, row.expiresAt ? row.expiresAt.getTime() - Date.now() : KEY_CACHE_TTL_MS)
      if (evictions === this.evictions && ttl > 0) this.knownKeys.set(digest, known, { ttl })
      return known
    })()
    this.lookups.set(digest, { evictions, found })
    const done = () => {
      if (this.lookups.get(digest)?.found === found) this.lookups.delete(digest)
    }
    found.then(done, done)
    return found
  }

  /**
   * Applies a notice of KEY_REVOCATIONS_CHANNEL from another process. One this version does not
   * understand forgets every key: a lookup too many is cheaper than a revoked key that works.
   */
  applyRevocationNotice(payload: string): void {
    let notice: { key_id?: unknown; tenant_id?: unknown } = {}
    try {
      notice = JSON.parse(payload) as typeof notice
    } catch {
      // not ours to read: forget everything below
    }
    if (typeof notice.key_id === 'number') this.forgetKey(notice.key_id)
    else if (typeof notice.tenant_id === 'number') this.forgetTenant(notice.tenant_id)
    else this.forgetAllKeys()
  }

  /** Forgets every cached key: notices sent while this process was not listening are lost. */
  forgetAllKeys(): void {
    this.evictions++
    this.knownKeys.clear()
  }

  /** An agency's keys, newest first, revoked and expired ones included. */
  async listKeys(tenantId: number, page: { limit: number; offset: number }): Promise<{ items: ApiKey[]; total: number; limit: number; offset: number }> {
    const { rows, total } = await repository.listApiKeys(this.db, tenantId, page)
    return { items: rows.map(toApiKey), total, limit: page.limit, offset: page.offset }
  }

  /** An agency's keys for operators: an unknown agency is a 404, not an empty list. */
  async listKeysOfTenant(tenantId: number, page: { limit: number; offset: number }) {
    if (!(await repository.findTenant(this.db, tenantId))) throw ApiError.notFound(TENANT_NOT_FOUND)
    return this.listKeys(tenantId, page)
  }

  /**
   * A new key for the agency, shown this once; at most MAX_ACTIVE_KEYS may be active.
   * `callerKeyId`: the key an agency's own request came with (not given by operators).
   */
  async createKey(tenantId: number, input: ApiKeyCreateBody, callerKeyId?: number): Promise<CreatedApiKey> {
    const name = input.name === undefined ? undefined : trimmedText(input.name)
    if (name === '') throw ApiError.validation([{ loc: ['body', 'name'], msg: 'must not be blank' }])
    const key = generateApiKey()
    const row = await this.db.transaction(async (tx) => {
      const tenant = await this.lockTenant(tx, tenantId)
      if (callerKeyId !== undefined) await this.confirmCaller(tx, tenant, callerKeyId)
      if ((await repository.countActiveKeys(tx, tenantId)) >= MAX_ACTIVE_KEYS) {
        throw ApiError.conflict(`An agency may have at most ${MAX_ACTIVE_KEYS} active API keys; revoke one before creating another.`)
      }
      return repository.insertApiKey(tx, {
        tenantId,
        name: name ?? null,
        displayPrefix: key.slice(0, DISPLAY_PREFIX_LENGTH),
        digest: digestSecret(key),
        expiresInDays: input.expires_in_days,
      })
    })
    return { ...toApiKey(row), key }
  }

  /**
   * The agency revokes one of its keys. Revoking a revoked key changes nothing; revoking the
   * last active one is refused, as the agency would lock itself out.
   */
  async revokeOwnKey(tenantId: number, id: number, callerKeyId: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      await this.confirmCaller(tx, await this.lockTenant(tx, tenantId), callerKeyId)
      const key = await repository.findApiKey(tx, tenantId, id)
      if (!key) throw ApiError.notFound(API_KEY_NOT_FOUND)
      if (key.revokedAt) return
      if ((await repository.isActiveKeyOf(tx, tenantId, id)) && (await repository.countActiveKeys(tx, tenantId)) <= 1) {
        throw ApiError.conflict('This is the agency’s last active API key; create another one before revoking it.')
      }
      await this.revokeIn(tx, tenantId, id)
    })
    this.forgetKey(id)
  }

  /** An operator revokes any key of an agency, its last one too (a leaked key must stop working). */
  async revokeKey(tenantId: number, id: number): Promise<ApiKey> {
    const row = await this.db.transaction(async (tx) => {
      await this.lockTenant(tx, tenantId)
      const revoked = await this.revokeIn(tx, tenantId, id)
      if (!revoked) throw ApiError.notFound(API_KEY_NOT_FOUND)
      return revoked
    })
    this.forgetKey(id)
    return toApiKey(row)
  }

  /** The agency as operators see it. */
  async tenant(tenantId: number): Promise<AdminTenant> {
    const row = await repository.findTenant(this.db, tenantId)
    if (!row) throw ApiError.notFound(TENANT_NOT_FOUND)
    return toAdminTenant(row)
  }

  /**
   * Suspends the agency: its keys are refused at once on every API process, its published
   * listings leave the catalogue, and nothing of it is published or delivered until it is
   * unsuspended. Suspending a suspended agency changes nothing.
   */
  async suspend(tenantId: number): Promise<AdminTenant> {
    // It moves all the agency's published listings at once, as a batch of the internal check
    // publishes others: the two can deadlock over the catalogue's count rows (retryingConflicts).
    const row = await retryingConflicts(() =>
      this.db.transaction(async (tx) => {
        const current = await this.lockTenant(tx, tenantId)
        if (current.suspendedAt) return current
        const suspended = await repository.setSuspended(tx, tenantId, true)
        await this.effects.suspended(tx, tenantId)
        await repository.notify(tx, KEY_REVOCATIONS_CHANNEL, JSON.stringify({ tenant_id: tenantId }))
        return suspended!
      }),
    )
    this.forgetTenant(tenantId)
    return toAdminTenant(row)
  }

  /** Lifts a suspension: its keys work again and its listings are back as they were. Idempotent. */
  async unsuspend(tenantId: number): Promise<AdminTenant> {
    const row = await retryingConflicts(() =>
      this.db.transaction(async (tx) => {
        const current = await this.lockTenant(tx, tenantId)
        if (!current.suspendedAt) return current
        const unsuspended = await repository.setSuspended(tx, tenantId, false)
        await this.effects.unsuspended(tx, tenantId, current.suspendedAt)
        return unsuspended!
      }),
    )
    return toAdminTenant(row)
  }

  /**
   * Of these agencies, those not suspended, locked until the transaction ends so that none is
   * suspended meanwhile: the internal check publishes only their listings. A suspension that
   * is committing is waited for and then seen.
   */
  lockUnsuspended(tx: Database, tenantIds: readonly number[]): Promise<Set<number>> {
    return repository.lockActiveTenants(tx, [...new Set(tenantIds)])
  }

  async register(input: RegistrationCreateBody) {
    const companyName = trimmedText(input.company_name)
    const contactName = input.contact_name === undefined ? null : trimmedText(input.contact_name)
    const blank = [
      ...(companyName === '' ? [{ loc: ['body', 'company_name'], msg: 'must not be blank' }] : []),
      ...(contactName === '' ? [{ loc: ['body', 'contact_name'], msg: 'must not be blank' }] : []),
    ]
    if (blank.length > 0) throw ApiError.validation(blank)
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
      companyName,
      email: input.email,
      country,
      contactName,
      phone,
    })
    return { request_code: row.requestCode, status: 'pending' as const, created_at: toOffsetTimestamp(row.createdAt) }
  }

  /** The applicant's view of a request: an unknown code and a wrong e-mail are the same 404. */
  async statusForApplicant(requestCode: string, email: string): Promise<RegistrationStatus> {
    // `?email=a+mls@x.ru` typed into a URL unencoded reads as `a mls@x.ru`, and no e-mail this
    // service accepts holds a blank: it can only have been a plus. A blank at the start may also
    // be one pasted with the address, so an address that starts with a plus (`+mls@x.ru`) is
    // looked for as well; one at the end is always pasted (a domain holds no plus).
    const trimmed = trimmedText(email).replaceAll(' ', '+')
    const withLeadingPlus = trimmedText(email.replaceAll(' ', '+')).replace(/\++$/, '')
    const row =
      (await repository.findRegistrationRequestForApplicant(this.db, requestCode, trimmed)) ??
      (withLeadingPlus === trimmed ? undefined : await repository.findRegistrationRequestForApplicant(this.db, requestCode, withLeadingPlus))
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
        displayPrefix: apiKey.slice(0, DISPLAY_PREFIX_LENGTH),
        digest: digestSecret(apiKey),
      })
      return repository.decideRegistrationRequest(tx, request.id, {
        status: 'approved',
        tenantId: tenant.id,
        apiKeyEncrypted: this.secrets.seal(apiKey),
        rejectReason: null,
      })
    })
    return this.statusOf(approved, true)
  }

  async reject(requestCode: string, reason: string): Promise<RegistrationStatus> {
    const why = trimmedText(reason)
    if (why === '') throw ApiError.validation([{ loc: ['body', 'reason'], msg: 'must say why: it is blank' }])
    const rejected = await this.db.transaction(async (tx) => {
      const request = await this.pendingRequest(tx, requestCode)
      return repository.decideRegistrationRequest(tx, request.id, {
        status: 'rejected',
        tenantId: null,
        apiKeyEncrypted: null,
        rejectReason: why,
      })
    })
    return this.statusOf(rejected)
  }

  /**
   * The agency as its own key would authenticate it, for work done on its behalf without a
   * request (a feed's run); undefined while it is suspended.
   */
  async actingAgency(tenantId: number): Promise<AuthenticatedTenant | undefined> {
    const tenant = await repository.findTenant(this.db, tenantId)
    if (!tenant || tenant.suspendedAt !== null) return undefined
    return { id: tenant.id, companyName: tenant.companyName, country: tenant.country as AuthenticatedTenant['country'] }
  }

  async me(tenantId: number) {
    const tenant = await repository.findTenant(this.db, tenantId)
    if (!tenant) throw ApiError.notFound(TENANT_NOT_FOUND)
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

  /**
   * The status as the applicant reads it. The key issued on approval is shown while it is
   * active (also while the agency is suspended: the key is not revoked, only refused meanwhile);
   * `keyActive` when the caller knows. A key sealed with another SECRET_KEY than this server's
   * cannot be read, so it is not shown either (docs/operations.md#secrets).
   */
  private async statusOf(row: RegistrationRequestRow, keyActive?: boolean): Promise<RegistrationStatus> {
    if (row.status !== 'approved') return { request_code: row.requestCode, status: row.status }
    const apiKey = this.secrets.tryOpen(row.apiKeyEncrypted!)
    const shown = apiKey !== undefined && (keyActive ?? (await repository.isKeyActive(this.db, digestSecret(apiKey))))
    return { request_code: row.requestCode, status: 'approved', tenant_id: row.tenantId!, ...(shown ? { api_key: apiKey } : {}) }
  }

  /** The agency's row, locked for a change of its keys or its suspension; 404 if there is none. */
  private async lockTenant(tx: Database, tenantId: number): Promise<TenantRow> {
    const tenant = await repository.lockTenant(tx, tenantId)
    if (!tenant) throw ApiError.notFound(TENANT_NOT_FOUND)
    return tenant
  }

  /**
   * The key an agency's request was let in with is still its active key, and the agency not
   * suspended, under the agency's lock, which revocations and suspensions take too. A request
   * let in before a revocation of its key and still sending its body would otherwise mint a key
   * that outlives the revocation: what an agency revokes a leaked key for.
   */
  private async confirmCaller(tx: Database, tenant: TenantRow, callerKeyId: number): Promise<void> {
    if (tenant.suspendedAt !== null || !(await repository.isActiveKeyOf(tx, tenant.id, callerKeyId))) {
      throw new ApiError('unauthorized', INVALID_API_KEY)
    }
  }

  /** Revokes the key and tells the other API processes to forget it once this commits. */
  private async revokeIn(tx: Database, tenantId: number, id: number): Promise<ApiKeyRow | undefined> {
    const revoked = await repository.revokeApiKey(tx, tenantId, id)
    if (revoked) await repository.notify(tx, KEY_REVOCATIONS_CHANNEL, JSON.stringify({ key_id: id }))
    return revoked
  }

  private forgetKey(keyId: number): void {
    this.forgetWhere((known) => known.keyId === keyId)
  }

  private forgetTenant(tenantId: number): void {
    this.forgetWhere((known) => known.tenant.id === tenantId)
  }

  /** Walks the cache (at most 10,000 keys, on a revocation or a suspension, which are rare). */
  private forgetWhere(matches: (known: AuthenticatedKey) => boolean): void {
    this.evictions++
    const digests = [...this.knownKeys.entries()].filter(([, known]) => matches(known)).map(([digest]) => digest)
    for (const digest of digests) this.knownKeys.delete(digest)
  }

  /**
   * Records the key's use, at most once a minute per key from this process. Not awaited: the
   * request neither waits for this bookkeeping nor fails with it; a write that fails is tried
   * again on the next use.
   */
  private recordUse(keyId: number): void {
    if (this.recordedUses.has(keyId)) return
    this.recordedUses.set(keyId, true)
    repository.recordKeyUse(this.db, keyId).catch(() => this.recordedUses.delete(keyId))
  }
}

function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    prefix: row.displayPrefix,
    created_at: toOffsetTimestamp(row.createdAt),
    last_used_at: row.lastUsedAt && toOffsetTimestamp(row.lastUsedAt),
    expires_at: row.expiresAt && toOffsetTimestamp(row.expiresAt),
    revoked_at: row.revokedAt && toOffsetTimestamp(row.revokedAt),
  }
}

function toAdminTenant(row: TenantRow): AdminTenant {
  return {
    tenant_id: row.id,
    company_name: row.companyName,
    email: row.email,
    country: row.country,
    contact_name: row.contactName,
    phone: row.phone,
    created_at: toOffsetTimestamp(row.createdAt),
    suspended_at: row.suspendedAt && toOffsetTimestamp(row.suspendedAt),
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
