/**
 * The fixed answers of the ceiling server, fetched once from the real catalogue so they carry
 * the same names, numbers and sizes as what the service sends.
 */
import type { CatalogueDetail, CataloguePage } from '../src/modules/catalogue/catalogue.schemas.js'
import type { Static } from 'typebox'

export interface CeilingFixtures {
  page: Static<typeof CataloguePage>
  item: CatalogueDetail
}

export async function fetchFixtures(serviceUrl: string, publishedId: number): Promise<CeilingFixtures> {
  return {
    page: await getJson<CeilingFixtures['page']>(`${serviceUrl}/mls/properties?limit=50`),
    item: await getJson<CatalogueDetail>(`${serviceUrl}/mls/properties/${publishedId}`),
  }
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url)
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}: ${await response.text()}`)
  return (await response.json()) as T
}
