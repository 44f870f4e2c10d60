import type { Static } from 'typebox'
import type { ErrorBody as ErrorBodySchema, ValidationErrorBody as ValidationErrorBodySchema } from '../../src/lib/schemas.js'
import type { CataloguePage as CataloguePageSchema } from '../../src/modules/catalogue/catalogue.schemas.js'
import type { PropertyImage } from '../../src/modules/images/images.schemas.js'
import type { ModerationReasonSchema, PropertyPage as PropertyPageSchema } from '../../src/modules/properties/properties.schemas.js'
import type {
  Attribute as AttributeSchema,
  City as CitySchema,
  District as DistrictSchema,
  NamedItem as NamedItemSchema,
  PropertyStatus as PropertyStatusSchema,
  ResidentialComplex as ResidentialComplexSchema,
} from '../../src/modules/reference/reference.schemas.js'
import type {
  AdminRegistrationPage as AdminRegistrationPageSchema,
  ApiKeyPage as ApiKeyPageSchema,
  RegistrationCreated as RegistrationCreatedSchema,
  RegistrationStatus,
  TenantMe as TenantMeSchema,
} from '../../src/modules/tenants/tenants.schemas.js'
import type { DeliveryLogPage as DeliveryLogPageSchema } from '../../src/modules/webhooks/webhooks.schemas.js'

// The bodies the API answers with, as the route schemas declare them, so that tests read
// responses with types. Where a module exports the type itself (`Property`, `CatalogueItem`,
// `WebhookSubscription`, …), tests import it from the module.

/** Every error's body: `{"detail": "…"}`, sometimes with more fields beside it. */
export type ErrorBody = Static<typeof ErrorBodySchema>

/** A 422's body: a summary in `detail`, and every problem with where it is. */
export type ValidationErrorBody = Static<typeof ValidationErrorBodySchema>

/** A refused status change also says which moves are allowed from the listing's status. */
export type StatusConflictBody = ErrorBody & { allowed_moves: number[] }

export type PropertyPage = Static<typeof PropertyPageSchema>
export type ModerationReason = Static<typeof ModerationReasonSchema>
export type CataloguePage = Static<typeof CataloguePageSchema>

export type NamedItem = Static<typeof NamedItemSchema>
export type PropertyStatus = Static<typeof PropertyStatusSchema>
export type City = Static<typeof CitySchema>
export type District = Static<typeof DistrictSchema>
export type ResidentialComplex = Static<typeof ResidentialComplexSchema>
export type Attribute = Static<typeof AttributeSchema>

export type RegistrationCreated = Static<typeof RegistrationCreatedSchema>
/** What an approval answers: the status of an approved request, which always names the tenant and its key. */
export type ApprovedRegistration = RegistrationStatus & { status: 'approved'; tenant_id: number; api_key: string }
export type TenantMe = Static<typeof TenantMeSchema>
export type AdminRegistrationPage = Static<typeof AdminRegistrationPageSchema>
export type ApiKeyPage = Static<typeof ApiKeyPageSchema>

export type DeliveryLogPage = Static<typeof DeliveryLogPageSchema>

/** A listing as GET /admin/properties shows it to an operator; written out because the route keeps its schema to itself. */
export interface ListingUnderReview {
  id: number
  tenant_id: number
  external_id: string | null
  status_id: number
  property_type_id: number
  deal_type_id: number
  price: number | null
  city_id: number | null
  district_id: number | null
  residential_complex_id: number | null
  address: string | null
  latitude: number | null
  longitude: number | null
  description: string | null
  attributes: Record<string, string | number | boolean>
  moderation: { checked_at: string; reasons: ModerationReason[] } | null
  waiting_for_check: boolean
  revision: { status: 'pending_review' | 'rejected'; submitted_at: string } | null
  updated_at: string
  version: string
}

export interface ListingUnderReviewPage {
  items: ListingUnderReview[]
  total: number
  limit: number
  offset: number
}

/** GET /: the service, its version and where its documentation is. */
export interface ServiceIndex {
  name: string
  version: string
  description: string
  links: { docs: string; openapi: string }
}

/** GET /healthz and GET /readyz. */
export interface HealthStatus {
  status: string
}

/** A photo as the API answers it: beyond the schema's required fields, the service always sends its thumbnail and size. */
export type StoredImage = PropertyImage & Required<Pick<PropertyImage, 'thumbnail_url' | 'width' | 'height'>>
