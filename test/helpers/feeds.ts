import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import type { Feed, FeedRunReport, FeedRunSummary } from '../../src/modules/feeds/feeds.schemas.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import type { JobContext } from '../../src/worker/job.js'
import { FeedRunJob } from '../../src/modules/feeds/feed-runs.job.js'
import type { Tenant } from './factories.js'
import { escapeXml } from './yandex-feed.js'

/** What an offer of a hand-written test feed says; anything left out is not written. */
export interface TestOffer {
  id: string
  type?: string
  category?: string
  price?: number | null
  currency?: string
  locality?: string
  subLocality?: string
  address?: string
  area?: number
  rooms?: number
  floor?: number
  floorsTotal?: number
  description?: string
  images?: string[]
  agent?: { name: string; phone: string } | null
}

/** `count` offers `prefix-1`, `prefix-2`…, priced 5,000,000 up by a thousand each, with `extra`. */
export const numberedOffers = (count: number, prefix: string, extra: Partial<TestOffer> = {}): TestOffer[] =>
  Array.from({ length: count }, (_, i) => ({ id: `${prefix}-${i + 1}`, price: 5_000_000 + i * 1000, ...extra }))

/** One `<offer>` of the Yandex.Realty format, as the public description writes it. */
export function offerXml(offer: TestOffer): string {
  const lines = [`<offer internal-id="${escapeXml(offer.id)}">`, `<type>${offer.type ?? 'продажа'}</type>`, '<property-type>жилая</property-type>']
  lines.push(`<category>${offer.category ?? 'квартира'}</category>`)
  lines.push('<location><country>Россия</country>')
  lines.push(`<locality-name>${escapeXml(offer.locality ?? 'Москва')}</locality-name>`)
  if (offer.subLocality) lines.push(`<sub-locality-name>${escapeXml(offer.subLocality)}</sub-locality-name>`)
  lines.push(`<address>${escapeXml(offer.address ?? `ул. Тверская, д. ${offer.id}`)}</address></location>`)
  if (offer.agent !== null) {
    const agent = offer.agent ?? { name: 'Мария Иванова', phone: '+7 912 345-67-89' }
    lines.push(`<sales-agent><name>${escapeXml(agent.name)}</name><phone>${escapeXml(agent.phone)}</phone></sales-agent>`)
  }
  if (offer.price !== null) lines.push(`<price><value>${offer.price ?? 8_500_000}</value><currency>${offer.currency ?? 'RUB'}</currency></price>`)
  lines.push(`<area><value>${offer.area ?? 54.5}</value><unit>кв. м</unit></area>`)
  lines.push(`<rooms>${offer.rooms ?? 2}</rooms><floor>${offer.floor ?? 5}</floor><floors-total>${offer.floorsTotal ?? 9}</floors-total>`)
  lines.push(`<description><![CDATA[${offer.description ?? 'Светлая квартира с видом на парк.'}]]></description>`)
  for (const image of offer.images ?? []) lines.push(`<image>${escapeXml(image)}</image>`)
  lines.push('</offer>')
  return lines.join('\n')
}

/** A whole feed file of these offers. */
export function feedXml(offers: readonly TestOffer[], generated = '2026-11-26T10:00:00+03:00'): string {
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<realty-feed xmlns="http://webmaster.yandex.ru/schemas/feed/realty/2010-06">',
    `<generation-date>${generated}</generation-date>`,
    ...offers.map(offerXml),
    '</realty-feed>',
  ].join('\n')
}

export async function createFeed(app: FastifyInstance, tenant: Tenant, body: Record<string, unknown>): Promise<Feed> {
  const response = await app.inject({ method: 'POST', url: '/feeds', headers: tenant.headers, payload: { format: 'yandex_realty', ...body } })
  assert.equal(response.statusCode, 201, response.body)
  return response.json<Feed>()
}

export async function runReport(app: FastifyInstance, tenant: Tenant, feedId: number, runId: number, query = ''): Promise<FeedRunReport> {
  const response = await app.inject({ method: 'GET', url: `/feeds/${feedId}/runs/${runId}${query}`, headers: tenant.headers })
  assert.equal(response.statusCode, 200, response.body)
  return response.json<FeedRunReport>()
}

/**
 * Runs the feed now, as `POST /feeds/{id}/runs` and a worker would, and answers with the
 * run's report once it has ended.
 */
export async function runFeedNow(app: FastifyInstance, context: JobContext, tenant: Tenant, feedId: number): Promise<FeedRunReport> {
  const started = await app.inject({ method: 'POST', url: `/feeds/${feedId}/runs`, headers: tenant.headers })
  assert.equal(started.statusCode, 202, started.body)
  const run = started.json<FeedRunSummary>()
  const job = new FeedRunJob({ pollIntervalMs: 50 })
  for (;;) {
    const report = await runReport(app, tenant, feedId, run.id, '?limit=100')
    if (report.status !== 'running') return report
    // Runs are taken oldest first, other feeds' too (a test's schedule may have started some).
    if ((await job.runOnce(context)) === 0) assert.fail(`run ${run.id} did not end, and no run was left to take`)
  }
}

/** The agency's listing with this external id (`GET /properties/by-external-id/…`), or undefined for a 404. */
export async function listingByExternalId(app: FastifyInstance, tenant: Tenant, externalId: string): Promise<Property | undefined> {
  const response = await app.inject({ method: 'GET', url: `/properties/by-external-id/${encodeURIComponent(externalId)}`, headers: tenant.headers })
  if (response.statusCode === 404) return undefined
  assert.equal(response.statusCode, 200, response.body)
  return response.json<Property>()
}
