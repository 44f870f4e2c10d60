import assert from 'node:assert/strict'
import { createReadStream, readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import {
  FeedFormatError,
  MAX_OFFER_CHARACTERS,
  readYandexRealtyOffers,
  type FeedOffer,
  type XmlElement,
} from '../../src/modules/feeds/yandex-realty/feed-reader.js'
import { generateYandexFeed } from '../helpers/yandex-feed.js'

// A full garbage collection on demand, without starting the process with --expose-gc.
setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url)

async function readAll(source: AsyncIterable<Buffer | string>): Promise<FeedOffer[]> {
  const offers: FeedOffer[] = []
  for await (const offer of readYandexRealtyOffers(source)) offers.push(offer)
  return offers
}

/** The bytes in slices of `size`, cutting characters of two bytes in half on the way. */
async function* slices(bytes: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let start = 0; start < bytes.length; start += size) yield bytes.subarray(start, start + size)
}

async function* strings(...parts: string[]): AsyncGenerator<string> {
  for (const part of parts) yield part
}

/** Reads to the end and returns the error it stopped with, with the offers yielded before it. */
async function failure(source: AsyncIterable<Buffer | string>): Promise<{ error: FeedFormatError; offers: FeedOffer[] }> {
  const offers: FeedOffer[] = []
  try {
    for await (const offer of readYandexRealtyOffers(source)) offers.push(offer)
  } catch (error) {
    assert.ok(error instanceof FeedFormatError, `expected a FeedFormatError, got ${String(error)}`)
    return { error, offers }
  }
  assert.fail('the feed was read without an error')
}

const childText = (element: XmlElement, path: string): string | undefined => {
  let current: XmlElement | undefined = element
  for (const name of path.split('/')) current = current?.children.find((candidate) => candidate.name === name)
  return current?.text
}

describe('readYandexRealtyOffers', () => {
  it('yields every offer of a file in document order, with its internal-id and line', async () => {
    const offers = await readAll(createReadStream(fixture('mixed.xml')))
    assert.deepEqual(
      offers.map((offer) => offer.internalId),
      [
        'flat-ru',
        'flat-en',
        'room-daily',
        'flat-monthly',
        'house-yo',
        'townhouse',
        'lot-per-sotka',
        'office-per-m2',
        'no-price',
        'unknown-city',
        'garage',
        'usd',
        '',
        'odd-values',
      ],
    )
    const text = readFileSync(fixture('mixed.xml'), 'utf8').split('\n')
    for (const offer of offers) assert.match(text[offer.line - 1]!, /<offer[ >]/, `line ${offer.line} is the offer's tag`)
  })

  it('keeps CDATA and entities as text, attributes by name, and every child in order', async () => {
    const [flat] = await readAll(createReadStream(fixture('mixed.xml')))
    assert.equal(childText(flat!.element, 'description'), 'Светлая квартира с <b>евроремонтом</b> & видом на парк.\nРядом школа и детский сад.')
    const images = flat!.element.children.filter((child) => child.name === 'image')
    assert.deepEqual(
      images.map((image) => image.text),
      [
        'https://photos.example/flat-ru/1.jpg',
        'https://photos.example/flat-ru/2.jpg',
        'http://photos.example/flat-ru/3.jpg?size=large&v=2',
        'https://photos.example/flat-ru/2.jpg',
      ],
    )
    assert.deepEqual(images[0]!.attributes, { tag: 'plan' })
    assert.equal(childText(flat!.element, 'location/metro/name'), 'Тверская')
    assert.equal(childText(flat!.element, 'price/value'), '8 500 000')
  })

  it('matches elements by local name, whatever prefix or namespace they carry', async () => {
    const offers = await readAll(
      strings(
        '<yr:realty-feed xmlns:yr="http://webmaster.yandex.ru/schemas/feed/realty/2010-06">',
        '<yr:offer yr:internal-id="p1"><yr:type>продажа</yr:type><crm:note xmlns:crm="urn:crm">x</crm:note><undeclared:thing>y</undeclared:thing></yr:offer>',
        '</yr:realty-feed>',
      ),
    )
    assert.equal(offers.length, 1)
    assert.equal(offers[0]!.internalId, 'p1')
    assert.deepEqual(
      offers[0]!.element.children.map((child) => [child.name, child.text]),
      [
        ['type', 'продажа'],
        ['note', 'x'],
        ['thing', 'y'],
      ],
    )
  })

  it('reads the same offers however the bytes are cut into chunks, characters split included', async () => {
    const bytes = readFileSync(fixture('mixed.xml'))
    const whole = await readAll(strings(bytes.toString('utf8')))
    for (const size of [1, 3, 7, 1000]) {
      assert.deepEqual(await readAll(slices(bytes, size)), whole, `chunks of ${size} bytes`)
    }
  })

  it('reads a feed written in windows-1251, as its declaration says', async () => {
    const [offer] = await readAll(createReadStream(fixture('windows-1251.xml')))
    assert.equal(offer!.internalId, 'cp1251')
    assert.equal(childText(offer!.element, 'location/locality-name'), 'Нижний Новгород')
    assert.equal(childText(offer!.element, 'description'), 'Тёплая квартира у Волги.')
  })

  it('stops a file whose bytes are not UTF-8, with no declaration saying what they are, with not_xml', async () => {
    // The windows-1251 feed with its declaration cut to `<?xml version="1.0"?>`: read as UTF-8,
    // every Russian letter would be a replacement character, and the ids other offers' ids.
    const bytes = readFileSync(fixture('windows-1251.xml')).toString('latin1').replace(' encoding="windows-1251"', '')
    const { error, offers } = await failure(slices(Buffer.from(bytes, 'latin1'), 100))
    assert.equal(error.code, 'not_xml')
    assert.match(error.message, /not valid utf-8 text; write it in UTF-8, or name its encoding/)
    assert.deepEqual(offers, [])
  })

  it('yields an offer without internal-id with an empty id, and trims the id', async () => {
    const offers = await readAll(strings('<realty-feed><offer><type>sale</type></offer><offer internal-id="  A-1  "/></realty-feed>'))
    assert.deepEqual(
      offers.map((offer) => offer.internalId),
      ['', 'A-1'],
    )
  })

  it('reads a feed with no offers as no offers', async () => {
    assert.deepEqual(await readAll(strings('<?xml version="1.0"?>\n<realty-feed><generation-date>2026-11-26</generation-date></realty-feed>\n')), [])
  })

  it('stops a file that breaks mid-file with not_xml, naming the line', async () => {
    const { error } = await failure(createReadStream(fixture('broken-mid-file.xml')))
    assert.equal(error.code, 'not_xml')
    assert.match(error.message, /not well-formed XML at line 14/)
  })

  it('stops a file cut off in the middle with truncated', async () => {
    const { error } = await failure(createReadStream(fixture('cut-off.xml')))
    assert.equal(error.code, 'truncated')
    assert.match(error.message, /cut off/)
  })

  it('stops a document whose root is not realty-feed with wrong_root', async () => {
    const { error, offers } = await failure(createReadStream(fixture('wrong-root.xml')))
    assert.equal(error.code, 'wrong_root')
    assert.match(error.message, /<yml_catalog>/)
    assert.deepEqual(offers, [])
    assert.equal((await failure(strings('<!DOCTYPE html><html><body>Not found</body></html>'))).error.code, 'wrong_root')
  })

  it('stops what is not XML at all with not_xml', async () => {
    for (const text of ['', '   \n', '{"offers": []}', 'offer;price\n1;100', '<realty-feed><offer internal-id="1"></realty-feed>']) {
      const { error } = await failure(strings(text))
      assert.equal(error.code, 'not_xml', JSON.stringify(text))
      assert.ok(error.message.length > 0)
    }
    assert.equal((await failure(strings('<realty-feed></realty-feed><realty-feed></realty-feed>'))).error.code, 'not_xml')
  })

  it('expands no entity a DTD declares: neither a file nor a multiplied text reaches an offer', async () => {
    const declarations = ['<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">', '<!ENTITY b SYSTEM "file:///etc/passwd">']
    for (const declaration of declarations) {
      const feed = `<?xml version="1.0"?><!DOCTYPE realty-feed [${declaration}]><realty-feed><offer internal-id="1"><description>&b;</description></offer></realty-feed>`
      const { error } = await failure(strings(feed))
      assert.equal(error.code, 'not_xml')
      assert.match(error.message, /undefined entity/)
    }
  })

  /**
   * A file whose middle is `block` written `times` over, 8 MiB or more in all, and how much of the
   * middle the reader had asked for when it stopped: it must stop within a slice of the limit.
   */
  async function stoppedReading(head: string, block: string, times: number, tail: string) {
    let read = 0
    async function* file(): AsyncGenerator<string> {
      yield head
      for (let i = 0; i < times; i++) {
        read += block.length
        yield block
      }
      yield tail
    }
    const { error } = await failure(file())
    assert.equal(error.code, 'offer_too_large')
    assert.ok(read <= MAX_OFFER_CHARACTERS + 2 * 64 * 1024, `${read} characters read of ${block.length * times} before it stopped`)
    return error
  }

  it('refuses an offer over 1 MiB of text with offer_too_large, having read little past 1 MiB of it', async () => {
    // One text of 8 MiB: the parser holds a text until it ends, so the reader must stop it before.
    const error = await stoppedReading(
      '<realty-feed><offer internal-id="big"><description>',
      'я'.repeat(64 * 1024),
      128,
      '</description></offer></realty-feed>',
    )
    assert.match(error.message, /"big"/)
  })

  it('refuses an offer of over 1 MiB of markup alone (empty elements) with offer_too_large', async () => {
    const error = await stoppedReading('<realty-feed><offer internal-id="markup">', '<a/>'.repeat(16 * 1024), 128, '</offer></realty-feed>')
    assert.match(error.message, /"markup"/)
  })

  it('refuses a comment of over 1 MiB between offers with offer_too_large, having read little past 1 MiB of it', async () => {
    await stoppedReading('<realty-feed><offer internal-id="1"><type>продажа</type></offer><!--', 'x'.repeat(64 * 1024), 128, '--></realty-feed>')
  })

  it('reads 100,000 generated offers with the heap growing well under 150 MiB', async () => {
    // What the heap holds alive, garbage collected first: the process may be running other test
    // files, whose garbage a collection would otherwise clear at any moment, or not.
    const liveHeap = () => {
      collectGarbage()
      return process.memoryUsage().heapUsed
    }
    const before = liveHeap()
    let peak = before
    let count = 0
    for await (const offer of readYandexRealtyOffers(generateYandexFeed(100_000))) {
      count += 1
      assert.notEqual(offer.internalId, '')
      if (count % 10_000 === 0) peak = Math.max(peak, liveHeap())
    }
    assert.equal(count, 100_000)
    const growthMiB = (peak - before) / 1024 / 1024
    assert.ok(growthMiB < 100, `heap grew by ${growthMiB.toFixed(1)} MiB`)
  })
})
