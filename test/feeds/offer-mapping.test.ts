import assert from 'node:assert/strict'
import { createReadStream } from 'node:fs'
import { describe, it } from 'node:test'
import { Value } from 'typebox/value'
import { seedCities, seedDistricts } from '../../src/db/seed/places.js'
import { parseAttributes } from '../../src/modules/properties/attributes.js'
import { PropertySubmission } from '../../src/modules/properties/properties.schemas.js'
import { readYandexRealtyOffers, type FeedOffer } from '../../src/modules/feeds/yandex-realty/feed-reader.js'
import { feedPlaces, isRefusal, mapOffer, offerProblemCodes, type MappedOffer } from '../../src/modules/feeds/yandex-realty/offer-mapping.js'
import { generateYandexFeed, yandexFeedText } from '../helpers/yandex-feed.js'

const places = feedPlaces(seedCities, seedDistricts)
const knownCodes = new Set<string>(offerProblemCodes.map((entry) => entry.code))

async function mapAll(source: AsyncIterable<Buffer | string>): Promise<MappedOffer[]> {
  const mapped: MappedOffer[] = []
  for await (const offer of readYandexRealtyOffers(source)) mapped.push(mapOffer(offer, places))
  return mapped
}

async function* strings(...parts: string[]): AsyncGenerator<string> {
  for (const part of parts) yield part
}

/** Maps one offer written inside `<offer internal-id="t">`. */
async function mapOne(inner: string): Promise<MappedOffer> {
  const offers: FeedOffer[] = []
  for await (const offer of readYandexRealtyOffers(strings(`<realty-feed><offer internal-id="t">${inner}</offer></realty-feed>`))) offers.push(offer)
  assert.equal(offers.length, 1)
  return mapOffer(offers[0]!, places)
}

const MOSCOW = '<location><locality-name>Москва</locality-name></location>'
const PRICE = '<price><value>5000000</value><currency>RUB</currency></price>'
/** A flat for sale in Moscow with `extra` elements. */
const flatWith = (extra: string) => mapOne(`<type>продажа</type><category>квартира</category>${MOSCOW}${PRICE}${extra}`)

const codes = (mapped: MappedOffer) => mapped.problems.map((problem) => problem.code)
const refusal = (mapped: MappedOffer) => {
  assert.equal(mapped.submission, null, 'the offer is refused')
  assert.equal(mapped.problems.length, 1, JSON.stringify(mapped.problems))
  return mapped.problems[0]!
}

/** The invariants every mapped offer keeps, whatever it was. */
function assertWellFormed(mapped: MappedOffer): void {
  for (const problem of mapped.problems) {
    assert.ok(knownCodes.has(problem.code), `${problem.code} is listed in offerProblemCodes`)
    assert.equal(problem.internal_id, mapped.internalId)
    assert.match(problem.message, /[а-яё]/i, 'the message is in Russian')
  }
  assert.equal(
    mapped.submission === null,
    mapped.problems.some((problem) => isRefusal(problem.code)),
    'refused exactly when a problem refuses',
  )
  if (mapped.submission) {
    assert.ok(Value.Check(PropertySubmission, mapped.submission), `a valid PropertySubmission: ${JSON.stringify(mapped.submission)}`)
    assert.deepEqual(parseAttributes(mapped.submission.attributes ?? {}).errors, [], 'every attribute is one the catalogue takes')
  }
  for (const url of mapped.imageUrls) assert.match(url, /^https?:\/\//)
  assert.equal(new Set(mapped.imageUrls).size, mapped.imageUrls.length, 'no photo twice')
}

describe('mapOffer on a feed written from the format description', async () => {
  const mapped = await mapAll(createReadStream(new URL('./fixtures/mixed.xml', import.meta.url)))
  const byId = new Map(mapped.map((offer) => [offer.internalId, offer]))
  const get = (id: string) => byId.get(id) ?? assert.fail(`no offer ${id}`)

  it('keeps the invariants on every offer', () => {
    for (const offer of mapped) assertWellFormed(offer)
  })

  it('maps a full Russian offer: every element the catalogue has a place for', () => {
    assert.deepEqual(get('flat-ru'), {
      internalId: 'flat-ru',
      submission: {
        property_type: 'Квартира',
        deal_type: 'Продажа',
        price: 8_500_000,
        description: 'Светлая квартира с <b>евроремонтом</b> & видом на парк.\nРядом школа и детский сад.',
        owner: { name: 'Иван Петров', phone: '8 (912) 345-67-89' },
        location: { city_id: 1, district_id: 1, address: 'ул. Тверская, д. 7', apartment_number: '12', latitude: 55.7577, longitude: 37.6133 },
        attributes: {
          area: '54.5',
          living_area: '32',
          kitchen_area: '10.5',
          rooms: '2',
          isolated_rooms: 'true',
          floor: '5',
          total_floors: '9',
          year_built: '1985',
          building_type: 'Кирпичный',
          condition: 'Евроремонт',
          balcony: 'Лоджия',
          bathroom: 'Совмещённый',
          ceiling_height: '2.7',
          elevator: 'true',
          parking: 'Подземная',
          internet: 'Нет',
          furniture: 'Полная',
          built_in_kitchen: 'true',
          phone: 'true',
        },
      },
      imageUrls: ['https://photos.example/flat-ru/1.jpg', 'https://photos.example/flat-ru/2.jpg', 'http://photos.example/flat-ru/3.jpg?size=large&v=2'],
      problems: [],
    })
  })

  it('maps the English spelling of the same elements', () => {
    const offer = get('flat-en')
    assert.deepEqual(offer.problems, [])
    assert.deepEqual(offer.submission, {
      property_type: 'Квартира',
      deal_type: 'Продажа',
      price: 12_000_000,
      description: 'A bright flat on the main avenue.',
      owner: { name: 'Maria Ivanova', phone: '+79161234567' },
      location: { city_id: 2, district_id: 24, address: 'Невский проспект, 100' },
      attributes: {
        area: '71.2',
        rooms: '3',
        floor: '2',
        total_floors: '6',
        building_type: 'Кирпичный',
        condition: 'Дизайнерский',
        balcony: 'Балкон',
        bathroom: 'Раздельный',
        elevator: 'true',
      },
    })
  })

  it('takes a room as a flat of the rooms offered, with the room’s own area, rented by the day', () => {
    const offer = get('room-daily')
    assert.deepEqual(offer.problems, [])
    assert.equal(offer.submission!.property_type, 'Квартира')
    assert.equal(offer.submission!.deal_type, 'Посуточная аренда')
    assert.equal(offer.submission!.price, 1500)
    assert.deepEqual(offer.submission!.location, { city_id: 4, district_id: 45 })
    assert.deepEqual(offer.submission!.attributes, { area: '14', rooms: '1', floor: '4', total_floors: '5' })
  })

  it('takes an offer with only the required elements, leaving the rest empty', () => {
    assert.deepEqual(get('flat-monthly'), {
      internalId: 'flat-monthly',
      submission: {
        property_type: 'Квартира',
        deal_type: 'Долгосрочная аренда',
        price: 45_000,
        description: null,
        owner: null,
        location: { city_id: 5, district_id: null },
        attributes: {},
      },
      imageUrls: [],
      problems: [],
    })
  })

  it('maps a house with its land in hectares, a district written with е for ё, and its walls', () => {
    const offer = get('house-yo')
    assert.deepEqual(offer.problems, [])
    assert.equal(offer.submission!.property_type, 'Дом')
    assert.deepEqual(offer.submission!.location, { city_id: 9, district_id: 78, address: 'ул. Берёзовая, 3' })
    assert.deepEqual(offer.submission!.attributes, {
      area: '140',
      area_land: '15',
      rooms: '5',
      total_floors: '2',
      building_type: 'Деревянный',
      wall_material: 'Дерево',
      condition: 'Косметический',
      electricity: 'Есть',
      gas: 'Нет',
    })
    assert.deepEqual(offer.imageUrls, ['https://photos.example/house-yo/a.jpg', 'https://photos.example/house-yo/b.jpg'])
  })

  it('maps a townhouse, reading areas without a unit as m² and the lot as sotkas', () => {
    const offer = get('townhouse')
    assert.deepEqual(offer.problems, [])
    assert.equal(offer.submission!.property_type, 'Таунхаус')
    assert.deepEqual(offer.submission!.location, { city_id: 12, district_id: 104 })
    assert.deepEqual(offer.submission!.attributes, { area: '96', area_land: '2', total_floors: '2' })
  })

  it('multiplies a price per sotka or per m² by the area', () => {
    const lot = get('lot-per-sotka')
    assert.deepEqual(lot.problems, [])
    assert.equal(lot.submission!.property_type, 'Земля')
    assert.equal(lot.submission!.price, 1_200_000)
    assert.deepEqual(lot.submission!.attributes, { area_land: '8', land_category: 'ИЖС' })

    const office = get('office-per-m2')
    assert.deepEqual(office.problems, [])
    assert.equal(office.submission!.property_type, 'Коммерция')
    assert.equal(office.submission!.deal_type, 'Долгосрочная аренда')
    assert.equal(office.submission!.price, 144_000)
    assert.deepEqual(office.submission!.location, { city_id: 10, district_id: 92 })
    assert.deepEqual(office.submission!.attributes, { area: '120', floor: '1', total_floors: '4', commercial_type: 'Офис' })
  })

  it('refuses what cannot be a listing, each with its reason', () => {
    const expected: [string, string, string][] = [
      ['no-price', 'missing_price', 'price/value'],
      ['unknown-city', 'unknown_locality', 'location/locality-name'],
      ['garage', 'unknown_category', 'category'],
      ['usd', 'unsupported_currency', 'price/currency'],
      ['', 'missing_internal_id', 'internal-id'],
    ]
    for (const [id, code, field] of expected) {
      const problem = refusal(get(id))
      assert.equal(problem.code, code, id)
      assert.equal(problem.field, field, id)
      assert.ok(isRefusal(code))
    }
    assert.match(refusal(get('unknown-city')).message, /«Тверь»/)
    assert.match(refusal(get('garage')).message, /«гараж»/)
    assert.match(refusal(get('usd')).message, /«USD»/)
  })

  it('knows no word that names a property every JavaScript object has («constructor», «__proto__»)', async () => {
    const offer = (type: string, category: string, price: string) =>
      mapOne(`<type>${type}</type><category>${category}</category>${MOSCOW}${price}<area><value>40</value></area>`)
    for (const word of ['constructor', '__proto__', 'toString']) {
      assert.equal(refusal(await offer(word, 'квартира', PRICE)).code, 'unknown_deal_type', word)
      assert.equal(refusal(await offer('продажа', word, PRICE)).code, 'unknown_category', word)
      const perUnit = `<price><value>100000</value><currency>RUB</currency><unit>${word}</unit></price>`
      assert.equal(refusal(await offer('продажа', 'квартира', perUnit)).code, 'invalid_price', word)
      const building = await flatWith(`<building-type>${word}</building-type>`)
      assert.deepEqual(codes(building), ['unknown_value'], word)
      assertWellFormed(building)
    }
  })

  it('imports an offer with odd optional values, leaving those out with a word each', () => {
    const offer = get('odd-values')
    assert.deepEqual(offer.submission, {
      property_type: 'Квартира',
      deal_type: 'Продажа',
      price: 3_500_000,
      description: null,
      owner: null,
      location: { city_id: 8, district_id: null },
      attributes: { area: '38' },
    })
    assert.deepEqual(offer.imageUrls, ['https://photos.example/odd/2.jpg'])
    assert.deepEqual(
      offer.problems.map((problem) => [problem.code, problem.field]),
      [
        ['not_applicable', 'lot-area/value'],
        ['unknown_sub_locality', 'location/sub-locality-name'],
        ['unknown_value', 'floor'],
        ['unknown_value', 'building-type'],
        ['unknown_value', 'balcony'],
        ['invalid_phone', 'sales-agent/phone'],
        ['invalid_image_url', 'image'],
      ],
    )
    for (const problem of offer.problems) assert.equal(isRefusal(problem.code), false, problem.code)
    assert.match(offer.problems.find((problem) => problem.code === 'unknown_value' && problem.field === 'floor')!.message, /«пятый»/)
  })
})

describe('mapOffer, element by element', () => {
  it('reads the deal type in both languages and the rent period', async () => {
    const dealOf = async (type: string, period = '') =>
      (await mapOne(`<type>${type}</type><category>квартира</category>${MOSCOW}<price><value>50000</value><currency>RUB</currency>${period}</price>`))
        .submission?.deal_type
    assert.equal(await dealOf('продажа'), 'Продажа')
    assert.equal(await dealOf('SALE'), 'Продажа')
    assert.equal(await dealOf('аренда'), 'Долгосрочная аренда')
    assert.equal(await dealOf('rent', '<period>месяц</period>'), 'Долгосрочная аренда')
    assert.equal(await dealOf('rent', '<period>month</period>'), 'Долгосрочная аренда')
    assert.equal(await dealOf('Аренда', '<period>день</period>'), 'Посуточная аренда')
    assert.equal(await dealOf('rent', '<period>day</period>'), 'Посуточная аренда')

    const yearly = await mapOne(
      `<type>аренда</type><category>квартира</category>${MOSCOW}<price><value>1</value><currency>RUB</currency><period>год</period></price>`,
    )
    assert.equal(refusal(yearly).code, 'unsupported_rent_period')
    assert.equal(refusal(await mapOne(`<type>обмен</type><category>квартира</category>${MOSCOW}${PRICE}`)).code, 'unknown_deal_type')
    assert.equal(refusal(await mapOne(`<category>квартира</category>${MOSCOW}${PRICE}`)).code, 'unknown_deal_type')
  })

  it('reports every reason an offer is refused, and nothing else about it', async () => {
    const mapped = await mapOne(
      '<type>продажа</type><category>квартира</category><location><locality-name>Тверь</locality-name></location><lot-area><value>6</value></lot-area>',
    )
    assert.equal(mapped.submission, null)
    assert.deepEqual(codes(mapped).sort(), ['missing_price', 'unknown_locality'])
    // An unknown category or deal hides none of the reasons judged without it.
    const garage = await mapOne('<type>продажа</type><category>гараж</category><location><locality-name>Тмутаракань</locality-name></location>')
    assert.equal(garage.submission, null)
    assert.deepEqual(codes(garage).sort(), ['missing_price', 'unknown_category', 'unknown_locality'])
    const exchange = await mapOne(`<type>обмен</type><category>квартира</category>${MOSCOW}<price><value>-5</value></price>`)
    assert.equal(exchange.submission, null)
    assert.deepEqual(codes(exchange).sort(), ['invalid_price', 'unknown_deal_type'])
    const dollars = await mapOne(`<type>продажа</type><category>гараж</category>${MOSCOW}<price><value>100000</value><currency>USD</currency></price>`)
    assert.deepEqual(codes(dollars).sort(), ['unknown_category', 'unsupported_currency'])
    const perParrot = await mapOne(`<type>обмен</type><category>участок</category>${MOSCOW}<price><value>100</value><unit>попугай</unit></price>`)
    assert.deepEqual(codes(perParrot).sort(), ['invalid_price', 'unknown_deal_type'])
  })

  it('maps every category of the format, in both languages, and refuses the rest', async () => {
    const categories: [string, string][] = [
      ['квартира', 'Квартира'],
      ['flat', 'Квартира'],
      ['комната', 'Квартира'],
      ['room', 'Квартира'],
      ['дом', 'Дом'],
      ['house', 'Дом'],
      ['коттедж', 'Дом'],
      ['cottage', 'Дом'],
      ['дача', 'Дом'],
      ['дом с участком', 'Дом'],
      ['house with lot', 'Дом'],
      ['часть дома', 'Дом'],
      ['таунхаус', 'Таунхаус'],
      ['townhouse', 'Таунхаус'],
      ['дуплекс', 'Таунхаус'],
      ['участок', 'Земля'],
      ['lot', 'Земля'],
      ['земельный участок', 'Земля'],
      ['коммерческая', 'Коммерция'],
      ['commercial', 'Коммерция'],
    ]
    for (const [category, type] of categories) {
      const mapped = await mapOne(`<type>продажа</type><category>${category}</category>${MOSCOW}${PRICE}`)
      assert.equal(mapped.submission?.property_type, type, category)
    }
    for (const category of ['гараж', 'garage', 'hostel', 'койко-место', '']) {
      const problem = refusal(await mapOne(`<type>продажа</type><category>${category}</category>${MOSCOW}${PRICE}`))
      assert.equal(problem.code, 'unknown_category', category)
    }
  })

  it('takes roubles as RUB, RUR or unnamed, and refuses other currencies and non-prices', async () => {
    const priceOf = async (price: string) => mapOne(`<type>продажа</type><category>квартира</category>${MOSCOW}<price>${price}</price>`)
    assert.equal((await priceOf('<value>100</value><currency>RUR</currency>')).submission?.price, 100)
    assert.equal((await priceOf('<value>100.5</value>')).submission?.price, 100.5)
    assert.equal((await priceOf('<value>1 200 000,50</value><currency>руб.</currency>')).submission?.price, 1_200_000.5)
    for (const currency of ['EUR', 'USD', 'KZT'])
      assert.equal(refusal(await priceOf(`<value>100</value><currency>${currency}</currency>`)).code, 'unsupported_currency')
    for (const value of ['договорная', '0', '-5', '']) {
      const code = refusal(await priceOf(`<value>${value}</value><currency>RUB</currency>`)).code
      assert.equal(code, value === '' ? 'missing_price' : 'invalid_price', value)
    }
    assert.equal(refusal(await priceOf('<value>99999999999999</value>')).code, 'invalid_price')
  })

  it('takes the price in the money of the city’s country: tenge in Kazakhstan', async () => {
    const inAlmaty = (currency: string) =>
      mapOne(
        `<type>продажа</type><category>квартира</category><location><locality-name>Алматы</locality-name></location><price><value>45000000</value>${currency}</price>`,
      )
    assert.equal((await inAlmaty('<currency>KZT</currency>')).submission?.price, 45_000_000)
    assert.equal((await inAlmaty('')).submission?.price, 45_000_000)
    const roubles = refusal(await inAlmaty('<currency>RUB</currency>'))
    assert.equal(roubles.code, 'unsupported_currency')
    assert.match(roubles.message, /KZT/)
  })

  it('takes two rooms offered as one listing of both rooms’ areas, and the flat’s area when one of them cannot be read', async () => {
    const rooms = (spaces: string) =>
      mapOne(`<type>продажа</type><category>комната</category>${MOSCOW}${PRICE}<area><value>64</value></area><rooms-offered>2</rooms-offered>${spaces}`)
    const both = await rooms('<room-space><value>14.2</value><unit>кв. м</unit></room-space><room-space><value>10.1</value></room-space>')
    assert.deepEqual([both.submission?.attributes?.area, both.submission?.attributes?.rooms], ['24.3', '2'])
    const unreadable = await rooms('<room-space><value>14.2</value></room-space><room-space><value>большая</value></room-space>')
    assert.equal(unreadable.submission?.attributes?.area, '64')
    assert.ok(unreadable.problems.some((problem) => problem.field === 'room-space/value'))
  })

  it('takes the price of a city an operator added in another country in that country’s money, by its ISO 4217 code', async () => {
    const withTashkent = feedPlaces([...seedCities, { id: 9001, name: 'Ташкент', country: 'UZ', region: 'Ташкент' }], seedDistricts)
    const inTashkent = async (currency: string) => {
      const offers: FeedOffer[] = []
      const inner = `<type>продажа</type><category>квартира</category><location><locality-name>Ташкент</locality-name></location><price><value>900000000</value>${currency}</price>`
      for await (const offer of readYandexRealtyOffers(strings(`<realty-feed><offer internal-id="t">${inner}</offer></realty-feed>`))) offers.push(offer)
      return mapOffer(offers[0]!, withTashkent)
    }
    assert.equal((await inTashkent('<currency>UZS</currency>')).submission?.price, 900_000_000)
    assert.equal((await inTashkent('<currency>uzs</currency>')).submission?.price, 900_000_000)
    assert.equal((await inTashkent('')).submission?.price, 900_000_000)
    for (const currency of ['RUB', 'USD']) {
      const refused = refusal(await inTashkent(`<currency>${currency}</currency>`))
      assert.equal(refused.code, 'unsupported_currency')
      assert.match(refused.message, /UZS/, 'names the money to use')
      assert.doesNotMatch(refused.message, /рубл/)
    }
  })

  it('converts a price per unit to the whole price, and refuses one without the area', async () => {
    const priced = (price: string, areas: string) => mapOne(`<type>продажа</type><category>участок</category>${MOSCOW}<price>${price}</price>${areas}`)
    const perHectare = await priced(
      '<value>1000000</value><currency>RUB</currency><unit>гектар</unit>',
      '<lot-area><value>50</value><unit>сотка</unit></lot-area>',
    )
    assert.equal(perHectare.submission?.price, 500_000)
    const perSqM = await priced('<value>2000</value><unit>sq. m</unit>', '<lot-area><value>6</value><unit>сотка</unit></lot-area>')
    assert.equal(perSqM.submission?.price, 1_200_000)
    // By the area as written, not as kept: 600.505 m² is 6.0051 sotkas on the listing, but 600,505 ₽.
    const unrounded = await priced('<value>1000</value><unit>кв. м</unit>', '<lot-area><value>600.505</value><unit>кв. м</unit></lot-area>')
    assert.deepEqual([unrounded.submission?.price, unrounded.submission?.attributes?.['area_land']], [600_505, '6.0051'])
    // A sotka is kept to four decimals: a hundredth of a m², as the other areas.
    const halfMetre = await priced('<value>1000</value><unit>кв. м</unit>', '<lot-area><value>612.5</value><unit>кв. м</unit></lot-area>')
    assert.deepEqual([halfMetre.submission?.price, halfMetre.submission?.attributes?.['area_land']], [612_500, '6.125'])
    const flat = await mapOne(
      `<type>продажа</type><category>квартира</category>${MOSCOW}<price><value>300000</value><unit>кв. м</unit></price><area><value>45.555</value></area>`,
    )
    assert.deepEqual([flat.submission?.price, flat.submission?.attributes?.['area']], [13_666_500, '45.56'])
    const missing = refusal(await priced('<value>2000</value><unit>кв. м</unit>', ''))
    assert.equal(missing.code, 'price_unit_without_area')
    assert.equal(missing.field, 'price/unit')
  })

  it('converts the units of areas, and leaves an unknown unit out', async () => {
    const landOf = async (lot: string) =>
      (await mapOne(`<type>продажа</type><category>участок</category>${MOSCOW}${PRICE}<lot-area>${lot}</lot-area>`)).submission?.attributes
    assert.deepEqual(await landOf('<value>600</value><unit>кв. м</unit>'), { area_land: '6' })
    assert.deepEqual(await landOf('<value>1,5</value><unit>гектар</unit>'), { area_land: '150' })
    assert.deepEqual(await landOf('<value>12</value><unit>sotka</unit>'), { area_land: '12' })
    assert.deepEqual(await landOf('<value>0.3</value><unit>hectare</unit>'), { area_land: '30' })
    const parrots = await flatWith('<area><value>40</value><unit>попугаев</unit></area>')
    assert.deepEqual(parrots.submission?.attributes, {})
    assert.deepEqual(codes(parrots), ['unknown_value'])
    assert.equal(parrots.problems[0]!.field, 'area/unit')
  })

  it('maps building types, renovation, balconies and bathrooms to the catalogue’s words', async () => {
    const attribute = async (element: string, value: string, name: string) =>
      (await flatWith(`<${element}>${value}</${element}>`)).submission?.attributes?.[name]
    const table: [string, string, string, string][] = [
      ['building-type', 'панельный', 'building_type', 'Панельный'],
      ['building-type', 'panel', 'building_type', 'Панельный'],
      ['building-type', 'Монолит', 'building_type', 'Монолит'],
      ['building-type', 'кирпично-монолитный', 'building_type', 'Монолит'],
      ['building-type', 'деревянный', 'building_type', 'Деревянный'],
      ['renovation', 'дизайнерский', 'condition', 'Дизайнерский'],
      ['renovation', 'euro', 'condition', 'Евроремонт'],
      ['renovation', 'косметический', 'condition', 'Косметический'],
      ['renovation', 'частичный ремонт', 'condition', 'Косметический'],
      ['renovation', 'требует ремонта', 'condition', 'Без ремонта'],
      ['renovation', 'черновая отделка', 'condition', 'Без ремонта'],
      ['balcony', 'балкон', 'balcony', 'Балкон'],
      ['balcony', '2 лоджии', 'balcony', 'Лоджия'],
      ['balcony', 'балкон и лоджия', 'balcony', 'Лоджия'],
      ['balcony', 'terrace', 'balcony', 'Терраса'],
      ['balcony', 'нет', 'balcony', 'Нет'],
      ['bathroom-unit', 'совмещённый', 'bathroom', 'Совмещённый'],
      ['bathroom-unit', 'раздельный', 'bathroom', 'Раздельный'],
      ['bathroom-unit', '2', 'bathroom_count', '2'],
      ['ceiling-height', '3,1', 'ceiling_height', '3.1'],
      ['ceiling-height', '270', 'ceiling_height', '2.7'],
      ['lift', 'нет', 'elevator', 'false'],
      ['lift', '1', 'elevator', 'true'],
      ['room-furniture', 'частично', 'furniture', 'Частично'],
      ['room-furniture', 'нет', 'furniture', 'Без мебели'],
      ['parking', 'нет', 'parking', 'Нет'],
      ['internet', 'оптика', 'internet', 'Оптика'],
      ['floor', '-1', 'floor', '-1'],
      ['floor', '\u22121', 'floor', '-1'],
      ['built-year', '2024', 'year_built', '2024'],
    ]
    for (const [element, value, name, expected] of table) assert.equal(await attribute(element, value, name), expected, `${element} ${value}`)
  })

  it('leaves out a bare "да" where the catalogue needs a kind, without a word', async () => {
    const mapped = await flatWith('<parking>да</parking><internet>да</internet>')
    assert.deepEqual(mapped.submission?.attributes, {})
    assert.deepEqual(mapped.problems, [])
  })

  it('leaves out numbers the catalogue cannot take, never refusing the offer for them', async () => {
    for (const extra of [
      '<rooms>2.5</rooms>',
      '<floor>-50</floor>',
      '<built-year>MCMLXXX</built-year>',
      '<lift>наверное</lift>',
      '<ceiling-height>45</ceiling-height>',
    ]) {
      const mapped = await flatWith(extra)
      assert.notEqual(mapped.submission, null, extra)
      assert.deepEqual(mapped.submission!.attributes, {}, extra)
      assert.deepEqual(codes(mapped), ['unknown_value'], extra)
    }
  })

  it('takes the owner from sales-agent: the first phone, the organization for a missing name', async () => {
    const ownerOf = async (agent: string) => flatWith(`<sales-agent>${agent}</sales-agent>`)
    assert.deepEqual((await ownerOf('<name>Анна</name><phone>+7 926 111-22-33</phone><phone>+7 926 444-55-66</phone>')).submission?.owner, {
      name: 'Анна',
      phone: '+7 926 111-22-33',
    })
    assert.deepEqual((await ownerOf('<organization>Агентство «Дом»</organization><phone>8 701 234 5678</phone>')).submission?.owner, {
      name: 'Агентство «Дом»',
      phone: '8 701 234 5678',
    })
    const invalid = await ownerOf('<name>Анна</name><phone>позвоните в офис</phone>')
    assert.equal(invalid.submission?.owner, null)
    assert.deepEqual(codes(invalid), ['invalid_phone'])
    const noPhone = await ownerOf('<name>Анна</name><email>anna@example.com</email>')
    assert.equal(noPhone.submission?.owner, null)
    assert.deepEqual(codes(noPhone), ['incomplete_sales_agent'])
  })

  it('cuts a description longer than a listing keeps, and says so', async () => {
    const mapped = await flatWith(`<description><![CDATA[${'Очень длинное описание. '.repeat(500)}]]></description>`)
    assert.equal(mapped.submission?.description?.length, 10_000)
    assert.deepEqual(codes(mapped), ['value_truncated'])
  })

  it('refuses an internal-id that cannot be an external id', async () => {
    const offers: FeedOffer[] = []
    const long = 'x'.repeat(101)
    for await (const offer of readYandexRealtyOffers(strings(`<realty-feed><offer internal-id="${long}"><type>продажа</type></offer></realty-feed>`)))
      offers.push(offer)
    assert.equal(refusal(mapOffer(offers[0]!, places)).code, 'invalid_internal_id')
  })

  it('maps generated offers over every shipped city without a problem', async () => {
    const mapped = await mapAll(generateYandexFeed(2000, { seed: 7, images: (index) => [`https://photos.example/${index}/1.jpg`] }))
    assert.equal(mapped.length, 2000)
    for (const offer of mapped) {
      assertWellFormed(offer)
      assert.deepEqual(offer.problems, [], offer.internalId)
      assert.equal(offer.imageUrls.length, 1)
    }
  })

  it('generates the same offers for the same seed, each whatever the count, and applies tweaks and omissions', async () => {
    const small = await yandexFeedText(20, { seed: 3 })
    assert.equal(await yandexFeedText(20, { seed: 3 }), small)
    const large = await mapAll(generateYandexFeed(40, { seed: 3 }))
    assert.deepEqual(
      (await mapAll(strings(small))).map((offer) => offer.submission),
      large.slice(0, 20).map((offer) => offer.submission),
    )
    assert.notEqual(await yandexFeedText(20, { seed: 4 }), small)
    const tweaked = await mapAll(generateYandexFeed(5, { seed: 3, tweak: (index) => (index === 2 ? { price: null } : {}), omit: (index) => index === 4 }))
    assert.deepEqual(
      tweaked.map((offer) => offer.internalId),
      ['offer-0', 'offer-1', 'offer-2', 'offer-3'],
    )
    assert.equal(refusal(tweaked[2]!).code, 'missing_price')
  })

  it('lists each problem code once, with a meaning', () => {
    assert.equal(knownCodes.size, offerProblemCodes.length)
    for (const entry of offerProblemCodes) assert.ok(entry.meaning.length > 10, entry.code)
  })
})

describe('feedPlaces', () => {
  it('finds cities whatever the case, ё or a "г." in front', () => {
    for (const name of ['Москва', 'МОСКВА', ' москва ', 'г. Москва', 'г.Москва', 'город Москва']) assert.equal(places.cityByName(name)?.id, 1, name)
    assert.equal(places.cityByName('Ростов-на-Дону')?.id, 11)
    assert.equal(places.cityByName('ростов - на - дону')?.id, 11)
    assert.equal(places.cityByName('Нижний  Новгород')?.id, 7)
    assert.equal(places.cityByName('Тверь'), null)
    assert.equal(places.cityByName(''), null)
  })

  it('tells apart two cities of one name by the offer’s region', async () => {
    const twoKirovsks = feedPlaces(
      [
        { id: 40, name: 'Кировск', country: 'RU', region: 'Мурманская область' },
        { id: 41, name: 'Кировск', country: 'RU', region: 'Ленинградская область' },
      ],
      [],
    )
    assert.equal(twoKirovsks.cityByName('Кировск', 'ленинградская область')?.id, 41)
    assert.equal(twoKirovsks.cityByName('Кировск', 'Мурманская область')?.id, 40)
    assert.equal(twoKirovsks.cityByName('Кировск')?.id, 40)
    assert.equal(twoKirovsks.cityByName('Кировск', 'Тверская область')?.id, 40)
    const offers: FeedOffer[] = []
    const feed = strings(
      '<realty-feed><offer internal-id="k"><type>продажа</type><category>квартира</category>',
      '<location><region>Ленинградская область</region><locality-name>Кировск</locality-name></location>',
      '<price><value>3000000</value></price></offer></realty-feed>',
    )
    for await (const offer of readYandexRealtyOffers(feed)) offers.push(offer)
    assert.deepEqual(mapOffer(offers[0]!, twoKirovsks).submission?.location, { city_id: 41, district_id: null })
  })

  it('finds districts of the city only, by name, ё-insensitively, with or without "район"', () => {
    assert.equal(places.districtByName(9, 'Демский')?.id, 78)
    assert.equal(places.districtByName(9, 'ДЁМСКИЙ район')?.id, 78)
    assert.equal(places.districtByName(2, 'Невский р-н')?.id, 24)
    assert.equal(places.districtByName(2, 'район Невский')?.id, 24)
    assert.equal(places.districtByName(1, 'Невский'), null)
    assert.equal(places.districtByName(12, 'Прикубанский внутригородской округ')?.id, 104)
    assert.equal(places.districtByName(1, 'район'), null)
  })

  it('finds Moscow’s okrugs by their initials', () => {
    const okrugs: [string, number][] = [
      ['ЦАО', 1],
      ['Центральный АО', 1],
      ['САО', 2],
      ['СВАО', 3],
      ['ЮЗАО', 7],
      ['ЗАО', 8],
      ['ЗелАО', 10],
      ['НАО', 11],
      ['ТАО', 12],
    ]
    for (const [name, id] of okrugs) assert.equal(places.districtByName(1, name)?.id, id, name)
  })
})

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

  it('leaves out a coordinate given without the other, and says so', async () => {
    for (const [given, field] of [
      ['<latitude>55.75</latitude>', 'location/latitude'],
      ['<longitude>37.61</longitude>', 'location/longitude'],
    ] as const) {
      const offer = await mapOne(`<type>продажа</type><category>квартира</category><location><locality-name>Москва</locality-name>${given}</location>${PRICE}`)
      assert.equal(offer.submission?.location?.latitude, undefined, given)
      assert.equal(offer.submission?.location?.longitude, undefined, given)
      assert.deepEqual(
        offer.problems.map((problem) => [problem.code, problem.field]),
        [['unknown_value', field]],
        given,
      )
    }
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
