/**
 * Offers at the mapping's limits: a price per m² without the area it needs, and texts counted in
 * characters as the API counts them.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { seedCities, seedDistricts } from '../../src/db/seed/places.js'
import { readYandexRealtyOffers, type FeedOffer } from '../../src/modules/feeds/yandex-realty/feed-reader.js'
import { feedPlaces, mapOffer, type MappedOffer } from '../../src/modules/feeds/yandex-realty/offer-mapping.js'

const places = feedPlaces(seedCities, seedDistricts)

async function* strings(...parts: string[]): AsyncGenerator<string> {
  for (const part of parts) yield part
}

async function mapOne(inner: string): Promise<MappedOffer> {
  const offers: FeedOffer[] = []
  for await (const offer of readYandexRealtyOffers(strings(`<realty-feed><offer internal-id="t">${inner}</offer></realty-feed>`))) offers.push(offer)
  assert.equal(offers.length, 1)
  return mapOffer(offers[0]!, places)
}

const MOSCOW = '<location><locality-name>Москва</locality-name></location>'

describe('offer mapping at its limits', () => {
  it('refuses a house priced per m² that gives no area of the house, rather than multiplying by its land', async () => {
    const house = await mapOne(
      `<type>продажа</type><category>дом</category>${MOSCOW}` +
        '<price><value>50000</value><currency>RUB</currency><unit>кв. м</unit></price>' +
        '<lot-area><value>15</value><unit>сотка</unit></lot-area>',
    )
    assert.equal(house.submission?.price, undefined, `stored with price ${house.submission?.price}`)
    assert.deepEqual(
      house.problems.map((problem) => problem.code),
      ['price_unit_without_area'],
    )
  })

  it('keeps a description of at most 10 000 characters whole, counting characters as the API does', async () => {
    const description = '🏠'.repeat(6_000)
    const flat = await mapOne(
      `<type>продажа</type><category>квартира</category>${MOSCOW}<price><value>5000000</value></price><description>${description}</description>`,
    )
    assert.deepEqual(
      flat.problems.map((problem) => problem.code),
      [],
    )
    assert.equal(flat.submission?.description, description)
  })
})
