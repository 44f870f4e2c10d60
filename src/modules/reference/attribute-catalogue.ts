/**
 * The attribute catalogue of interface §2.2: the one source of truth for which attributes a
 * property may carry, their types and their allowed values. Property validation, the typed
 * storage of values and `GET /attributes` all read it. Values and names are exact, including
 * the Cyrillic spelling (Совмещённый with ё).
 */
export type AttributeType = 'number' | 'integer' | 'bool' | 'enum'

export interface AttributeDefinition {
  name: string
  type: AttributeType
  /** What the attribute means, with its unit where it has one. */
  meaning: string
  /** For `enum` only: the exact allowed strings. */
  allowedValues?: readonly string[]
}

export const attributeCatalogue: readonly AttributeDefinition[] = [
  { name: 'area', type: 'number', meaning: 'total area, m²' },
  { name: 'rooms', type: 'integer', meaning: 'number of rooms' },
  { name: 'floor', type: 'integer', meaning: 'floor' },
  { name: 'total_floors', type: 'integer', meaning: 'floors in the building' },
  { name: 'kitchen_area', type: 'number', meaning: 'kitchen area, m²' },
  { name: 'living_area', type: 'number', meaning: 'living area, m²' },
  { name: 'ceiling_height', type: 'number', meaning: 'ceiling height, m' },
  { name: 'year_built', type: 'integer', meaning: 'year built' },
  { name: 'bedrooms', type: 'integer', meaning: 'number of bedrooms' },
  { name: 'building_type', type: 'enum', meaning: 'building type', allowedValues: ['Панельный', 'Кирпичный', 'Монолит', 'Металлокаркас', 'Деревянный'] },
  { name: 'wall_material', type: 'enum', meaning: 'wall material', allowedValues: ['Кирпич', 'Газоблок', 'Дерево', 'СИП-панели', 'Каркас', 'Полистиролбетон'] },
  { name: 'foundation', type: 'enum', meaning: 'foundation', allowedValues: ['Ленточный', 'Плитный', 'Свайный'] },
  { name: 'roof_type', type: 'enum', meaning: 'roof type', allowedValues: ['Плоская', 'Двускатная', 'Вальмовая'] },
  { name: 'entrance', type: 'integer', meaning: 'entrance' },
  { name: 'condition', type: 'enum', meaning: 'condition', allowedValues: ['Без ремонта', 'Косметический', 'Евроремонт', 'Дизайнерский'] },
  { name: 'furniture', type: 'enum', meaning: 'furniture', allowedValues: ['Без мебели', 'Частично', 'Полная'] },
  { name: 'window_type', type: 'enum', meaning: 'windows', allowedValues: ['Пластиковые', 'Деревянные', 'Алюминиевые'] },
  { name: 'area_land', type: 'number', meaning: 'land area, sotka' },
  { name: 'area_commercial', type: 'number', meaning: 'retail area, m²' },
  { name: 'area_warehouse', type: 'number', meaning: 'warehouse area, m²' },
  { name: 'bathroom', type: 'enum', meaning: 'bathroom', allowedValues: ['Совмещённый', 'Раздельный'] },
  { name: 'bathroom_count', type: 'integer', meaning: 'number of bathrooms' },
  { name: 'balcony', type: 'enum', meaning: 'balcony', allowedValues: ['Нет', 'Балкон', 'Лоджия', 'Терраса'] },
  { name: 'balcony_glazed', type: 'bool', meaning: 'balcony glazed' },
  { name: 'parking', type: 'enum', meaning: 'parking', allowedValues: ['Нет', 'Двор', 'Подземная', 'Гараж', 'Наземная'] },
  { name: 'parking_count', type: 'integer', meaning: 'number of parking places' },
  { name: 'heating_type', type: 'enum', meaning: 'heating', allowedValues: ['Центральное', 'Автономное', 'Нет'] },
  { name: 'internet', type: 'enum', meaning: 'internet', allowedValues: ['Нет', 'Проводной', 'Оптика', 'DSL', 'Мобильный (4G/5G)'] },
  { name: 'gas', type: 'enum', meaning: 'gas', allowedValues: ['Центральный', 'Баллон', 'Газгольдер', 'Нет'] },
  { name: 'water', type: 'enum', meaning: 'water supply', allowedValues: ['Центральное', 'Скважина/колодец', 'Нет'] },
  { name: 'sewage', type: 'enum', meaning: 'sewage', allowedValues: ['Центральная', 'Септик', 'Нет'] },
  { name: 'electricity', type: 'enum', meaning: 'electricity', allowedValues: ['Есть', 'Рядом', 'Нет'] },
  { name: 'electricity_power', type: 'integer', meaning: 'electric power, kW' },
  { name: 'phone', type: 'bool', meaning: 'telephone line' },
  { name: 'elevator', type: 'bool', meaning: 'elevator' },
  { name: 'is_corner', type: 'bool', meaning: 'corner unit' },
  { name: 'isolated_rooms', type: 'bool', meaning: 'isolated rooms' },
  { name: 'storage', type: 'bool', meaning: 'storage room' },
  { name: 'quiet_yard', type: 'bool', meaning: 'quiet yard' },
  { name: 'kitchen_studio', type: 'bool', meaning: 'kitchen-studio' },
  { name: 'new_plumbing', type: 'bool', meaning: 'new plumbing' },
  { name: 'built_in_kitchen', type: 'bool', meaning: 'built-in kitchen' },
  { name: 'security', type: 'bool', meaning: 'security' },
  { name: 'security_intercom', type: 'bool', meaning: 'intercom' },
  { name: 'security_video', type: 'bool', meaning: 'video surveillance' },
  { name: 'security_alarm', type: 'bool', meaning: 'alarm' },
  { name: 'security_fire_alarm', type: 'bool', meaning: 'fire alarm' },
  { name: 'security_coded_lock', type: 'bool', meaning: 'coded lock' },
  { name: 'security_concierge', type: 'bool', meaning: 'concierge' },
  { name: 'commercial_type', type: 'enum', meaning: 'commercial purpose', allowedValues: ['Офис', 'Торговое', 'Склад', 'Производство'] },
  { name: 'has_showcase', type: 'bool', meaning: 'shop windows' },
  { name: 'separate_entrance', type: 'bool', meaning: 'separate entrance' },
  { name: 'land_category', type: 'enum', meaning: 'land category', allowedValues: ['ИЖС', 'СНТ', 'ЛПХ', 'Коммерческое'] },
  { name: 'land_status', type: 'enum', meaning: 'land status', allowedValues: ['В собственности', 'В аренде'] },
  { name: 'communications_nearby', type: 'bool', meaning: 'utilities nearby' },
  { name: 'road_access', type: 'enum', meaning: 'access road', allowedValues: ['Асфальт', 'Гравий', 'Грунтовая', 'Нет'] },
  { name: 'is_pledged', type: 'bool', meaning: 'pledged' },
  { name: 'is_installment', type: 'bool', meaning: 'instalment available' },
  { name: 'is_exchange', type: 'bool', meaning: 'exchange possible' },
  { name: 'is_privatized', type: 'bool', meaning: 'privatised' },
  { name: 'documents_ready', type: 'bool', meaning: 'documents ready for deal' },
  { name: 'encumbrance', type: 'bool', meaning: 'encumbrance' },
  { name: 'ownership_type', type: 'enum', meaning: 'ownership type', allowedValues: ['Частная собственность', 'Долевая собственность', 'Государственная'] },
]

export const attributesByName: ReadonlyMap<string, AttributeDefinition> = new Map(
  attributeCatalogue.map((attribute) => [attribute.name, attribute]),
)
