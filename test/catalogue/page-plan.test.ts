import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  expectedRows,
  matchesIndexFor,
  needsMatchesIndex,
  pageNeedsCounts,
  planPage,
  priceIndexedPart,
  usedKeys,
  windowFor,
  withoutBounds,
} from '../../src/modules/catalogue/catalogue-page-plan.js'

describe('the catalogue page plan', () => {
  it('reads the smallest window of 100, 400, 1,600… that reaches the end of the page', () => {
    assert.equal(windowFor(1), 100)
    assert.equal(windowFor(100), 100)
    assert.equal(windowFor(101), 400)
    assert.equal(windowFor(1600), 1600)
    assert.equal(windowFor(1601), 6400)
  })

  it('names a search by the filters it uses, in a stable order', () => {
    assert.deepEqual(usedKeys({ rooms: 2, cityId: 1, minPrice: undefined, dealTypeId: 1 }), ['cityId', 'dealTypeId', 'rooms'])
    assert.deepEqual(usedKeys({}), [])
  })

  it('needs counts only for a price range, newest first', () => {
    assert.equal(pageNeedsCounts({ minPrice: 1 }, 'created_desc'), true)
    assert.equal(pageNeedsCounts({ maxPrice: 1 }, 'created_desc'), true)
    assert.equal(pageNeedsCounts({ minPrice: 1 }, 'price_asc'), false)
    assert.equal(pageNeedsCounts({ cityId: 1 }, 'created_desc'), false)
  })

  it('needs counts for an area on the map in any order an index keeps, never for the nearest first', () => {
    const box = { west: 37, south: 55, east: 38, north: 56 }
    assert.equal(pageNeedsCounts(box, 'created_desc'), true)
    assert.equal(pageNeedsCounts(box, 'price_asc'), true)
    assert.equal(pageNeedsCounts({ ...box, nearLat: 55.5, nearLon: 37.5, radiusM: 1000 }, 'distance'), false)
    assert.deepEqual(planPage({ ...box, nearLat: 55.5, nearLon: 37.5, radiusM: 1000 }, 'distance', 50), { kind: 'range' })
  })

  it('walks the order when an area keeps many of the listings, reads the area when it keeps few', () => {
    const box = { west: 37, south: 55, east: 38, north: 56, cityId: 1 }
    assert.deepEqual(planPage(box, 'price_asc', 50, { matches: 25_000, withoutBounds: 100_000 }), { kind: 'walk', depth: 400 })
    assert.deepEqual(planPage(box, 'created_desc', 50, { matches: 300, withoutBounds: 100_000 }), { kind: 'range' })
    // Newest first, the price range is a bound as well; sorted by price, the price index keeps it.
    assert.deepEqual(withoutBounds({ ...box, minPrice: 1 }, 'created_desc'), {
      ...box,
      minPrice: undefined,
      west: undefined,
      south: undefined,
      east: undefined,
      north: undefined,
    })
    assert.deepEqual(withoutBounds({ ...box, minPrice: 1 }, 'price_asc'), {
      ...box,
      minPrice: 1,
      west: undefined,
      south: undefined,
      east: undefined,
      north: undefined,
    })
  })

  it('reads a window for every other search', () => {
    assert.deepEqual(planPage({ cityId: 1 }, 'created_desc', 50), { kind: 'window', window: 100 })
    assert.deepEqual(planPage({ minPrice: 1 }, 'price_desc', 450), { kind: 'window', window: 1600 })
  })

  it('walks the newest when a price range keeps many of the listings, reads the range when it keeps few', () => {
    // Half the search's listings are in the range: about 2 × 50 × 2 = 200 index entries to walk.
    assert.deepEqual(planPage({ minPrice: 1 }, 'created_desc', 50, { matches: 5000, withoutBounds: 10_000 }), { kind: 'walk', depth: 400 })
    // One in a thousand: the walk would read more entries than there are matches.
    assert.deepEqual(planPage({ minPrice: 1 }, 'created_desc', 50, { matches: 10, withoutBounds: 10_000 }), { kind: 'range' })
    assert.deepEqual(planPage({ maxPrice: 1 }, 'created_desc', 50, { matches: 0, withoutBounds: 10 }), { kind: 'range' })
  })

  it('finds a box with a price range on the index that reads fewer listings', () => {
    const box = { west: 37.5, south: 55.6, east: 37.7, north: 55.8 }
    assert.equal(needsMatchesIndex({ ...box, maxPrice: 9e6 }), true)
    assert.equal(needsMatchesIndex({ ...box, rooms: 2 }), false)
    assert.equal(needsMatchesIndex({ minPrice: 1, cityId: 1 }), false)
    assert.deepEqual(usedKeys(priceIndexedPart({ ...box, minPrice: 1, rooms: 2, dealTypeId: 1, cityId: 3 })), ['cityId', 'dealTypeId', 'minPrice'])
    assert.equal(matchesIndexFor(40, 211_000), 'box')
    assert.equal(matchesIndexFor(203_000, 1_200), 'price')
  })

  it('refuses to plan a price range newest first without its counts', () => {
    assert.throws(() => planPage({ minPrice: 1 }, 'created_desc', 50), /planned from its counts/)
  })

  it('expects a full page, or what is left of the matches, or none past them', () => {
    assert.equal(expectedRows(50, 0, { matches: 120, withoutBounds: 500 }), 50)
    assert.equal(expectedRows(50, 100, { matches: 120, withoutBounds: 500 }), 20)
    assert.equal(expectedRows(50, 200, { matches: 120, withoutBounds: 500 }), 0)
  })
})
