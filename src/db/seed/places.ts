/**
 * Shipped reference places: cities, their administrative districts and a few
 * well-known residential complexes (ЖК). Each row has a fixed id, and the
 * migrations/seed step upserts these rows by id when the service starts. The
 * ids are part of the public contract: clients hard-code them (filters, deep
 * links, saved searches). Never renumber, reorder-with-new-ids or reuse an id.
 * Only append new rows with the next free id. To retire a place, keep its row
 * and mark it inactive elsewhere.
 */

export interface SeedCity {
  id: number
  name: string
  country: 'RU' | 'KZ'
  region: string
  latitude: number
  longitude: number
}

export interface SeedDistrict {
  id: number
  city_id: number
  name: string
}

export interface SeedResidentialComplex {
  id: number
  city_id: number
  district_id: number | null
  name: string
}

export const seedCities: readonly SeedCity[] = [
  { id: 1, name: 'Москва', country: 'RU', region: 'Москва', latitude: 55.7558, longitude: 37.6176 },
  { id: 2, name: 'Санкт-Петербург', country: 'RU', region: 'Санкт-Петербург', latitude: 59.939, longitude: 30.3158 },
  { id: 3, name: 'Новосибирск', country: 'RU', region: 'Новосибирская область', latitude: 55.0302, longitude: 82.9204 },
  { id: 4, name: 'Екатеринбург', country: 'RU', region: 'Свердловская область', latitude: 56.838, longitude: 60.5975 },
  { id: 5, name: 'Казань', country: 'RU', region: 'Республика Татарстан', latitude: 55.7963, longitude: 49.1088 },
  { id: 6, name: 'Красноярск', country: 'RU', region: 'Красноярский край', latitude: 56.0106, longitude: 92.8526 },
  { id: 7, name: 'Нижний Новгород', country: 'RU', region: 'Нижегородская область', latitude: 56.3269, longitude: 44.0059 },
  { id: 8, name: 'Челябинск', country: 'RU', region: 'Челябинская область', latitude: 55.1598, longitude: 61.4025 },
  { id: 9, name: 'Уфа', country: 'RU', region: 'Республика Башкортостан', latitude: 54.7348, longitude: 55.9579 },
  { id: 10, name: 'Самара', country: 'RU', region: 'Самарская область', latitude: 53.1959, longitude: 50.1002 },
  { id: 11, name: 'Ростов-на-Дону', country: 'RU', region: 'Ростовская область', latitude: 47.2224, longitude: 39.7187 },
  { id: 12, name: 'Краснодар', country: 'RU', region: 'Краснодарский край', latitude: 45.0355, longitude: 38.9753 },
  { id: 13, name: 'Омск', country: 'RU', region: 'Омская область', latitude: 54.9893, longitude: 73.3682 },
  { id: 14, name: 'Воронеж', country: 'RU', region: 'Воронежская область', latitude: 51.6606, longitude: 39.2006 },
  { id: 15, name: 'Пермь', country: 'RU', region: 'Пермский край', latitude: 58.0105, longitude: 56.2502 },
  { id: 16, name: 'Волгоград', country: 'RU', region: 'Волгоградская область', latitude: 48.708, longitude: 44.5133 },
  { id: 17, name: 'Алматы', country: 'KZ', region: 'Алматы', latitude: 43.2567, longitude: 76.9286 },
  { id: 18, name: 'Астана', country: 'KZ', region: 'Астана', latitude: 51.1694, longitude: 71.4491 },
]

export const seedDistricts: readonly SeedDistrict[] = [
  // 1 Москва: административные округа
  { id: 1, city_id: 1, name: 'Центральный административный округ' },
  { id: 2, city_id: 1, name: 'Северный административный округ' },
  { id: 3, city_id: 1, name: 'Северо-Восточный административный округ' },
  { id: 4, city_id: 1, name: 'Восточный административный округ' },
  { id: 5, city_id: 1, name: 'Юго-Восточный административный округ' },
  { id: 6, city_id: 1, name: 'Южный административный округ' },
  { id: 7, city_id: 1, name: 'Юго-Западный административный округ' },
  { id: 8, city_id: 1, name: 'Западный административный округ' },
  { id: 9, city_id: 1, name: 'Северо-Западный административный округ' },
  { id: 10, city_id: 1, name: 'Зеленоградский административный округ' },
  { id: 11, city_id: 1, name: 'Новомосковский административный округ' },
  { id: 12, city_id: 1, name: 'Троицкий административный округ' },

  // 2 Санкт-Петербург
  { id: 13, city_id: 2, name: 'Адмиралтейский' },
  { id: 14, city_id: 2, name: 'Василеостровский' },
  { id: 15, city_id: 2, name: 'Выборгский' },
  { id: 16, city_id: 2, name: 'Калининский' },
  { id: 17, city_id: 2, name: 'Кировский' },
  { id: 18, city_id: 2, name: 'Колпинский' },
  { id: 19, city_id: 2, name: 'Красногвардейский' },
  { id: 20, city_id: 2, name: 'Красносельский' },
  { id: 21, city_id: 2, name: 'Кронштадтский' },
  { id: 22, city_id: 2, name: 'Курортный' },
  { id: 23, city_id: 2, name: 'Московский' },
  { id: 24, city_id: 2, name: 'Невский' },
  { id: 25, city_id: 2, name: 'Петроградский' },
  { id: 26, city_id: 2, name: 'Петродворцовый' },
  { id: 27, city_id: 2, name: 'Приморский' },
  { id: 28, city_id: 2, name: 'Пушкинский' },
  { id: 29, city_id: 2, name: 'Фрунзенский' },
  { id: 30, city_id: 2, name: 'Центральный' },

  // 3 Новосибирск
  { id: 31, city_id: 3, name: 'Дзержинский' },
  { id: 32, city_id: 3, name: 'Железнодорожный' },
  { id: 33, city_id: 3, name: 'Заельцовский' },
  { id: 34, city_id: 3, name: 'Калининский' },
  { id: 35, city_id: 3, name: 'Кировский' },
  { id: 36, city_id: 3, name: 'Ленинский' },
  { id: 37, city_id: 3, name: 'Октябрьский' },
  { id: 38, city_id: 3, name: 'Первомайский' },
  { id: 39, city_id: 3, name: 'Советский' },
  { id: 40, city_id: 3, name: 'Центральный' },

  // 4 Екатеринбург
  { id: 41, city_id: 4, name: 'Академический' },
  { id: 42, city_id: 4, name: 'Верх-Исетский' },
  { id: 43, city_id: 4, name: 'Железнодорожный' },
  { id: 44, city_id: 4, name: 'Кировский' },
  { id: 45, city_id: 4, name: 'Ленинский' },
  { id: 46, city_id: 4, name: 'Октябрьский' },
  { id: 47, city_id: 4, name: 'Орджоникидзевский' },
  { id: 48, city_id: 4, name: 'Чкаловский' },

  // 5 Казань
  { id: 49, city_id: 5, name: 'Авиастроительный' },
  { id: 50, city_id: 5, name: 'Вахитовский' },
  { id: 51, city_id: 5, name: 'Кировский' },
  { id: 52, city_id: 5, name: 'Московский' },
  { id: 53, city_id: 5, name: 'Ново-Савиновский' },
  { id: 54, city_id: 5, name: 'Приволжский' },
  { id: 55, city_id: 5, name: 'Советский' },

  // 6 Красноярск
  { id: 56, city_id: 6, name: 'Железнодорожный' },
  { id: 57, city_id: 6, name: 'Кировский' },
  { id: 58, city_id: 6, name: 'Ленинский' },
  { id: 59, city_id: 6, name: 'Октябрьский' },
  { id: 60, city_id: 6, name: 'Свердловский' },
  { id: 61, city_id: 6, name: 'Советский' },
  { id: 62, city_id: 6, name: 'Центральный' },

  // 7 Нижний Новгород
  { id: 63, city_id: 7, name: 'Автозаводский' },
  { id: 64, city_id: 7, name: 'Канавинский' },
  { id: 65, city_id: 7, name: 'Ленинский' },
  { id: 66, city_id: 7, name: 'Московский' },
  { id: 67, city_id: 7, name: 'Нижегородский' },
  { id: 68, city_id: 7, name: 'Приокский' },
  { id: 69, city_id: 7, name: 'Советский' },
  { id: 70, city_id: 7, name: 'Сормовский' },

  // 8 Челябинск
  { id: 71, city_id: 8, name: 'Калининский' },
  { id: 72, city_id: 8, name: 'Курчатовский' },
  { id: 73, city_id: 8, name: 'Ленинский' },
  { id: 74, city_id: 8, name: 'Металлургический' },
  { id: 75, city_id: 8, name: 'Советский' },
  { id: 76, city_id: 8, name: 'Тракторозаводский' },
  { id: 77, city_id: 8, name: 'Центральный' },

  // 9 Уфа
  { id: 78, city_id: 9, name: 'Дёмский' },
  { id: 79, city_id: 9, name: 'Калининский' },
  { id: 80, city_id: 9, name: 'Кировский' },
  { id: 81, city_id: 9, name: 'Ленинский' },
  { id: 82, city_id: 9, name: 'Октябрьский' },
  { id: 83, city_id: 9, name: 'Орджоникидзевский' },
  { id: 84, city_id: 9, name: 'Советский' },

  // 10 Самара
  { id: 85, city_id: 10, name: 'Железнодорожный' },
  { id: 86, city_id: 10, name: 'Кировский' },
  { id: 87, city_id: 10, name: 'Красноглинский' },
  { id: 88, city_id: 10, name: 'Куйбышевский' },
  { id: 89, city_id: 10, name: 'Ленинский' },
  { id: 90, city_id: 10, name: 'Октябрьский' },
  { id: 91, city_id: 10, name: 'Промышленный' },
  { id: 92, city_id: 10, name: 'Самарский' },
  { id: 93, city_id: 10, name: 'Советский' },

  // 11 Ростов-на-Дону
  { id: 94, city_id: 11, name: 'Ворошиловский' },
  { id: 95, city_id: 11, name: 'Железнодорожный' },
  { id: 96, city_id: 11, name: 'Кировский' },
  { id: 97, city_id: 11, name: 'Ленинский' },
  { id: 98, city_id: 11, name: 'Октябрьский' },
  { id: 99, city_id: 11, name: 'Первомайский' },
  { id: 100, city_id: 11, name: 'Пролетарский' },
  { id: 101, city_id: 11, name: 'Советский' },

  // 12 Краснодар: внутригородские округа
  { id: 102, city_id: 12, name: 'Западный' },
  { id: 103, city_id: 12, name: 'Карасунский' },
  { id: 104, city_id: 12, name: 'Прикубанский' },
  { id: 105, city_id: 12, name: 'Центральный' },

  // 13 Омск: административные округа
  { id: 106, city_id: 13, name: 'Кировский' },
  { id: 107, city_id: 13, name: 'Ленинский' },
  { id: 108, city_id: 13, name: 'Октябрьский' },
  { id: 109, city_id: 13, name: 'Советский' },
  { id: 110, city_id: 13, name: 'Центральный' },

  // 14 Воронеж
  { id: 111, city_id: 14, name: 'Железнодорожный' },
  { id: 112, city_id: 14, name: 'Коминтерновский' },
  { id: 113, city_id: 14, name: 'Левобережный' },
  { id: 114, city_id: 14, name: 'Ленинский' },
  { id: 115, city_id: 14, name: 'Советский' },
  { id: 116, city_id: 14, name: 'Центральный' },

  // 15 Пермь
  { id: 117, city_id: 15, name: 'Дзержинский' },
  { id: 118, city_id: 15, name: 'Индустриальный' },
  { id: 119, city_id: 15, name: 'Кировский' },
  { id: 120, city_id: 15, name: 'Ленинский' },
  { id: 121, city_id: 15, name: 'Мотовилихинский' },
  { id: 122, city_id: 15, name: 'Орджоникидзевский' },
  { id: 123, city_id: 15, name: 'Свердловский' },

  // 16 Волгоград
  { id: 124, city_id: 16, name: 'Ворошиловский' },
  { id: 125, city_id: 16, name: 'Дзержинский' },
  { id: 126, city_id: 16, name: 'Кировский' },
  { id: 127, city_id: 16, name: 'Красноармейский' },
  { id: 128, city_id: 16, name: 'Краснооктябрьский' },
  { id: 129, city_id: 16, name: 'Советский' },
  { id: 130, city_id: 16, name: 'Тракторозаводский' },
  { id: 131, city_id: 16, name: 'Центральный' },

  // 17 Алматы
  { id: 132, city_id: 17, name: 'Алатауский' },
  { id: 133, city_id: 17, name: 'Алмалинский' },
  { id: 134, city_id: 17, name: 'Ауэзовский' },
  { id: 135, city_id: 17, name: 'Бостандыкский' },
  { id: 136, city_id: 17, name: 'Жетысуский' },
  { id: 137, city_id: 17, name: 'Медеуский' },
  { id: 138, city_id: 17, name: 'Наурызбайский' },
  { id: 139, city_id: 17, name: 'Турксибский' },

  // 18 Астана
  { id: 140, city_id: 18, name: 'Алматинский' },
  { id: 141, city_id: 18, name: 'Байконур' },
  { id: 142, city_id: 18, name: 'Есильский' },
  { id: 143, city_id: 18, name: 'Нура' },
  { id: 144, city_id: 18, name: 'Сарыаркинский' },
]

export const seedResidentialComplexes: readonly SeedResidentialComplex[] = [
  // Москва
  { id: 1, city_id: 1, district_id: 6, name: 'ЗИЛАРТ' }, // ЮАО, Даниловский
  { id: 2, city_id: 1, district_id: 5, name: 'Символ' }, // ЮВАО, Лефортово
  { id: 3, city_id: 1, district_id: 9, name: 'Сердце Столицы' }, // СЗАО, Хорошёво-Мнёвники
  { id: 4, city_id: 1, district_id: 9, name: 'Алые Паруса' }, // СЗАО, Щукино

  // Санкт-Петербург
  { id: 5, city_id: 2, district_id: 20, name: 'Балтийская жемчужина' }, // Красносельский
  { id: 6, city_id: 2, district_id: 15, name: 'Северная долина' }, // Выборгский, Парнас
  { id: 7, city_id: 2, district_id: 19, name: 'Цветной город' }, // Красногвардейский

  // Новосибирск
  { id: 8, city_id: 3, district_id: 37, name: 'Европейский берег' }, // Октябрьский, ул. Большевистская
  { id: 9, city_id: 3, district_id: 34, name: 'Тайгинский парк' }, // Калининский
  { id: 10, city_id: 3, district_id: 35, name: 'Акатуйский' }, // Кировский, ул. Петухова

  // Екатеринбург
  { id: 11, city_id: 4, district_id: 47, name: 'Изумрудный бор' }, // Орджоникидзевский
  { id: 12, city_id: 4, district_id: 42, name: 'Башня Исеть' }, // Верх-Исетский, Екатеринбург-Сити
  { id: 13, city_id: 4, district_id: 43, name: 'Макаровский квартал' }, // Железнодорожный

  // Казань
  { id: 14, city_id: 5, district_id: 51, name: 'Салават Купере' }, // Кировский
  { id: 15, city_id: 5, district_id: 55, name: 'Седьмое небо' }, // Советский
  { id: 16, city_id: 5, district_id: 49, name: 'Семь островов' }, // Авиастроительный

  // Алматы
  { id: 17, city_id: 17, district_id: null, name: 'Есентай Сити' },
  { id: 18, city_id: 17, district_id: null, name: 'Манхэттен' },

  // Астана
  { id: 19, city_id: 18, district_id: 142, name: 'Северное сияние' }, // Есильский
  { id: 20, city_id: 18, district_id: 142, name: 'Триумф Астаны' }, // Есильский
  { id: 21, city_id: 18, district_id: 142, name: 'Хайвил' }, // Есильский
]
