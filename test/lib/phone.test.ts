import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { normalisePhone } from '../../src/lib/phone.js'

describe('normalisePhone', () => {
  const russian: [string, string][] = [
    ['8 (912) 345-67-89', '+7 912 345-67-89'],
    ['89123456789', '+7 912 345-67-89'],
    ['+7 912 345 67 89', '+7 912 345-67-89'],
    ['+7(912)345-67-89', '+7 912 345-67-89'],
    ['7 912 345 67 89', '+7 912 345-67-89'],
    ['8 495 123-45-67', '+7 495 123-45-67'],
    // Any 11 digits starting with 8, as the interface has it, whatever range they are in.
    ['8 (123) 456-78-90', '+7 123 456-78-90'],
    ['8 (212) 345-67-89', '+7 212 345-67-89'],
  ]
  for (const [raw, expected] of russian) {
    it(`reads ${raw} in Russia as ${expected}`, () => assert.equal(normalisePhone(raw, 'RU'), expected))
  }

  it('reads Kazakh national numbers in the same +7 form', () => {
    assert.equal(normalisePhone('8 701 234 5678', 'KZ'), '+7 701 234-56-78')
  })

  it('reads a number written with its country’s code and no plus, in any of the code’s ranges', () => {
    assert.equal(normalisePhone('7 (912) 345-67-89', 'KZ'), '+7 912 345-67-89')
    assert.equal(normalisePhone('77011234567', 'RU'), '+7 701 123-45-67')
    assert.equal(normalisePhone('79123456789', 'US'), null)
  })

  it('gives any country’s ten-digit numbers the same form, however they are written', () => {
    assert.equal(normalisePhone('(212) 736-5000', 'US'), '+1 212 736-50-00')
    assert.equal(normalisePhone('+1 212 736 5000', 'RU'), '+1 212 736-50-00')
    assert.equal(normalisePhone('020 7946 0958', 'GB'), '+44 207 946-09-58')
  })

  it('gives numbers of other lengths their international form', () => {
    assert.equal(normalisePhone('030 1234567', 'DE'), '+49 30 1234567')
    assert.equal(normalisePhone('8 029 123-45-67', 'BY'), '+375 29 123 45 67')
  })

  it('keeps an extension, however it is written, as `доб.` after the number', () => {
    assert.equal(normalisePhone('+7 495 123-45-67 доб. 12', 'RU'), '+7 495 123-45-67 доб. 12')
    assert.equal(normalisePhone('8 (495) 123-45-67 ext. 12', 'RU'), '+7 495 123-45-67 доб. 12')
    assert.equal(normalisePhone('84951234567#12', 'RU'), '+7 495 123-45-67 доб. 12')
    assert.equal(normalisePhone('(212) 736-5000 ext. 12', 'US'), '+1 212 736-50-00 доб. 12')
    assert.equal(normalisePhone('030 1234567 x 3', 'DE'), '+49 30 1234567 доб. 3')
  })

  it('refuses what cannot be a number of the country', () => {
    for (const raw of [
      '',
      '12',
      'телефон',
      '+7 912 345-67-8',
      '8 (912) 345-67-890',
      'email me 89123456789@x.ru',
      'abc 912 345 67 89',
      'тел. 8 912 345 67 89',
      // Fourteen digits are a length Russian numbers may have, but only 8 800-style ones.
      '8 912 345-67-89 1234',
      '7 912 345-67-89 123',
    ]) {
      assert.equal(normalisePhone(raw, 'RU'), null, raw)
    }
  })
})
