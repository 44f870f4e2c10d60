import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { ListingFacts } from '../../src/modules/catalogue/listing-facts.js'
import { distanceMetres } from '../../src/modules/catalogue/geo.js'
import { compileFilter, filterErrors, type ListingFilter } from '../../src/modules/catalogue/listing-filter.js'

const flat: ListingFacts = {
  id: 7,
  tenant_id: 3,
  property_type_id: 1,
  deal_type_id: 1,
  city_id: 1,
  district_id: 4,
  residential_complex_id: null,
  price: 8_500_000,
  area: 54.5,
  rooms: 2,
  latitude: 55.7577,
  longitude: 37.6136,
}

const matches = (filter: ListingFilter, facts: ListingFacts = flat) => compileFilter(filter)(facts)

describe('a listing filter, on one listing’s facts', () => {
  it('matches when every parameter given does, bounds included, as the catalogue does', () => {
    assert.ok(matches({}))
    assert.ok(matches({ city_id: 1, district_id: 4, property_type_id: 1, deal_type_id: 1, tenant_id: 3, rooms: 2 }))
    assert.ok(matches({ min_price: 8_500_000, max_price: 8_500_000, min_area: 54.5, max_area: 54.5 }))
    assert.ok(!matches({ city_id: 2 }))
    assert.ok(!matches({ residential_complex_id: 1 }))
    assert.ok(!matches({ max_price: 8_499_999.99 }))
    assert.ok(!matches({ min_area: 54.51 }))
  })

  it('does not match a bound on a value the listing lacks', () => {
    const bare = { ...flat, price: null, area: null, rooms: null, latitude: null, longitude: null }
    assert.ok(matches({ city_id: 1 }, bare))
    for (const filter of [{ max_price: 1e12 }, { min_area: 0 }, { rooms: 0 }, { bbox: '-180,-90,180,90' }, { near: '0,0', radius_m: 100_000 }]) {
      assert.ok(!matches(filter, bare), JSON.stringify(filter))
    }
  })

  it('takes a bbox with its edges, and a radius by great-circle distance', () => {
    assert.ok(matches({ bbox: '37.6136,55.7577,37.7,55.8' }))
    assert.ok(!matches({ bbox: '37.62,55.7,37.7,55.8' }))
    // Moscow to Saint Petersburg: about 634 km.
    assert.ok(Math.abs(distanceMetres(55.7558, 37.6173, 59.9386, 30.3141) - 634_000) < 5_000)
    assert.ok(matches({ near: '55.7558,37.6173', radius_m: 320 })) // about 313 m away
    assert.ok(!matches({ near: '55.7558,37.6173', radius_m: 310 }))
  })

  it('names what is wrong across parameters', () => {
    const at = ['body', 'filter']
    const problems = (filter: ListingFilter) => filterErrors(filter, at).map((error) => error.loc.join('.'))
    assert.deepEqual(problems({ min_price: 2, max_price: 1, min_area: 2, max_area: 1 }), ['body.filter.min_price', 'body.filter.min_area'])
    assert.deepEqual(problems({ bbox: '1,2,3' }), ['body.filter.bbox'])
    assert.deepEqual(problems({ bbox: '1,2,3,1' }), ['body.filter.bbox'])
    assert.deepEqual(problems({ bbox: '-181,0,0,1' }), ['body.filter.bbox'])
    assert.deepEqual(problems({ near: '1,2' }), ['body.filter.radius_m'])
    assert.deepEqual(problems({ radius_m: 5 }), ['body.filter.radius_m'])
    assert.deepEqual(problems({ near: '1,200', radius_m: 5 }), ['body.filter.near'])
    assert.deepEqual(problems({ near: '0x1,2', radius_m: 5 }), ['body.filter.near'])
    assert.deepEqual(problems({ min_price: 1, max_price: 1, bbox: '-180,-90,180,90', near: '-90,180', radius_m: 1 }), [])
  })
})
