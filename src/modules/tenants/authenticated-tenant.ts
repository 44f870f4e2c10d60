import type { CountryCode } from 'libphonenumber-js'

/** The agency behind the API key of the current request. */
export interface AuthenticatedTenant {
  id: number
  companyName: string
  /** Drives phone normalisation for the tenant's owners. */
  country: CountryCode
}
