/**
 * The database schema, one source for Drizzle's queries and for the SQL migrations that
 * `npm run db:generate` writes into ./drizzle (checked in, applied at start).
 */
import { sql } from 'drizzle-orm'
import {
  bigint,
  char,
  check,
  doublePrecision,
  foreignKey,
  index,
  integer,
  pgTable,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  unique,
} from 'drizzle-orm/pg-core'

const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow()

// ---------------------------------------------------------------------------------------
// Reference data (D4). Dictionary ids are fixed by the decisions and seeded by migrations.

export const propertyTypes = pgTable('property_types', {
  id: smallint('id').primaryKey(),
  name: text('name').notNull().unique(),
})

export const dealTypes = pgTable('deal_types', {
  id: smallint('id').primaryKey(),
  name: text('name').notNull().unique(),
})

export const propertyStatuses = pgTable('property_statuses', {
  id: smallint('id').primaryKey(),
  code: text('code').notNull().unique(),
  name: text('name').notNull().unique(),
})

export const cities = pgTable(
  'cities',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    name: text('name').notNull(),
    country: char('country', { length: 2 }).notNull(),
    region: text('region'),
    latitude: doublePrecision('latitude'),
    longitude: doublePrecision('longitude'),
    createdAt: createdAt(),
  },
  (t) => [unique('cities_country_region_name_key').on(t.country, t.region, t.name).nullsNotDistinct()],
)

export const districts = pgTable(
  'districts',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    cityId: integer('city_id')
      .notNull()
      .references(() => cities.id),
    name: text('name').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    unique('districts_city_id_name_key').on(t.cityId, t.name),
    // Target of the composite foreign keys that prove a district lies in the given city.
    unique('districts_id_city_id_key').on(t.id, t.cityId),
  ],
)

export const residentialComplexes = pgTable(
  'residential_complexes',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    cityId: integer('city_id')
      .notNull()
      .references(() => cities.id),
    districtId: integer('district_id'),
    name: text('name').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    unique('residential_complexes_city_id_name_key').on(t.cityId, t.name),
    unique('residential_complexes_id_city_id_key').on(t.id, t.cityId),
    foreignKey({
      name: 'residential_complexes_district_in_city_fkey',
      columns: [t.districtId, t.cityId],
      foreignColumns: [districts.id, districts.cityId],
    }),
  ],
)

// ---------------------------------------------------------------------------------------
// Tenants (D3).

export const tenants = pgTable('tenants', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  companyName: text('company_name').notNull(),
  email: text('email').notNull(),
  country: char('country', { length: 2 }).notNull(),
  contactName: text('contact_name'),
  phone: text('phone'),
  createdAt: createdAt(),
})

export const registrationStatuses = ['pending', 'approved', 'rejected'] as const
export type RegistrationStatus = (typeof registrationStatuses)[number]

export const registrationRequests = pgTable(
  'registration_requests',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    requestCode: text('request_code').notNull().unique(),
    companyName: text('company_name').notNull(),
    email: text('email').notNull(),
    country: char('country', { length: 2 }).notNull(),
    contactName: text('contact_name'),
    phone: text('phone'),
    status: text('status').$type<RegistrationStatus>().notNull().default('pending'),
    rejectReason: text('reject_reason'),
    tenantId: integer('tenant_id').references(() => tenants.id),
    /** The API key issued on approval, AES-GCM encrypted with SECRET_KEY (§2.5 returns it). */
    apiKeyEncrypted: text('api_key_encrypted'),
    createdAt: createdAt(),
    decidedAt: timestamp('decided_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    check('registration_requests_status_check', sql`${t.status} in ('pending', 'approved', 'rejected')`),
    check(
      'registration_requests_approved_has_tenant_check',
      sql`(${t.status} = 'approved') = (${t.tenantId} is not null and ${t.apiKeyEncrypted} is not null)`,
    ),
    index('registration_requests_status_created_at_idx').on(t.status, t.createdAt),
  ],
)

export const apiKeys = pgTable(
  'api_keys',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    tenantId: integer('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    /** The first characters of the key, enough for a person to tell keys apart. */
    displayPrefix: text('display_prefix').notNull(),
    /** Hex SHA-256 of the whole key: authentication looks keys up by it. */
    digest: text('digest').notNull(),
    createdAt: createdAt(),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('api_keys_digest_key').on(t.digest)],
)
