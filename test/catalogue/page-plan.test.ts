import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { expectedRows, pageNeedsCounts, planPage, usedKeys, windowFor } from '../../src/modules/catalogue/catalogue-page-plan.js'

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

  it('reads a window for every other search', () => {
    assert.deepEqual(planPage({ cityId: 1 }, 'created_desc', 50), { kind: 'window', window: 100 })
    assert.deepEqual(planPage({ minPrice: 1 }, 'price_desc', 450), { kind: 'window', window: 1600 })
  })

  it('walks the newest when a price range keeps many of the listings, reads the range when it keeps few', () => {
    // Half the search's listings are in the range: about 2 × 50 × 2 = 200 index entries to walk.
    assert.deepEqual(planPage({ minPrice: 1 }, 'created_desc', 50, { matches: 5000, withoutPrice: 10_000 }), { kind: 'walk', depth: 400 })
    // One in a thousand: the walk would read more entries than there are matches.
    assert.deepEqual(planPage({ minPrice: 1 }, 'created_desc', 50, { matches: 10, withoutPrice: 10_000 }), { kind: 'range' })
    assert.deepEqual(planPage({ maxPrice: 1 }, 'created_desc', 50, { matches: 0, withoutPrice: 10 }), { kind: 'range' })
  })

  it('refuses to plan a price range newest first without its counts', () => {
    assert.throws(() => planPage({ minPrice: 1 }, 'created_desc', 50), /planned from its counts/)
  })

  it('expects a full page, or what is left of the matches, or none past them', () => {
    assert.equal(expectedRows(50, 0, { matches: 120, withoutPrice: 500 }), 50)
    assert.equal(expectedRows(50, 100, { matches: 120, withoutPrice: 500 }), 20)
    assert.equal(expectedRows(50, 200, { matches: 120, withoutPrice: 500 }), 0)
  })
})
