import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { offsetTimestampFromUtcText, toOffsetTimestamp } from '../../src/lib/time.js'

describe('timestamps as the API writes them', () => {
  it('writes a Date with milliseconds and +00:00', () => {
    assert.equal(toOffsetTimestamp(new Date(Date.UTC(2026, 10, 22, 9, 15, 2, 123))), '2026-11-22T09:15:02.123+00:00')
  })

  // PostgreSQL's JSON writes a timestamp with as many fraction digits as it needs, none for whole seconds.
  const fromDatabase: [string, string][] = [
    ['2026-11-22T09:15:02', '2026-11-22T09:15:02.000+00:00'],
    ['2026-11-22T09:15:02.5', '2026-11-22T09:15:02.500+00:00'],
    ['2026-11-22T09:15:02.05', '2026-11-22T09:15:02.050+00:00'],
    ['2026-11-22T09:15:02.123', '2026-11-22T09:15:02.123+00:00'],
    ['2026-11-22T09:15:02.999999', '2026-11-22T09:15:02.999+00:00'],
    ['2026-11-22T09:15:02.000001', '2026-11-22T09:15:02.000+00:00'],
  ]
  for (const [text, shown] of fromDatabase) {
    it(`writes ${text} as ${shown}, as a Date read from the database would be`, () => {
      assert.equal(offsetTimestampFromUtcText(text), shown)
      // A Date keeps whole milliseconds, cut: the same text either way.
      const [whole, fraction = ''] = text.split('.')
      assert.equal(toOffsetTimestamp(new Date(`${whole}.${fraction.padEnd(3, '0').slice(0, 3)}Z`)), shown)
    })
  }
})
