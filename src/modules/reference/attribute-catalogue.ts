/**
 * The attribute catalogue: the one source of truth for which attributes a
 * property may carry, their types and their allowed values. Property validation, the typed
 * storage of values and `GET /attributes` all read it. Values and names are exact, including
 * the Cyrillic spelling (Совмещённый with ё).
 */
import type { seedPropertyTypes } from '../../db/seed/dictionaries.js'

export type AttributeType = 'number' | 'integer' | 'bool' | 'enum'
export type PropertyTypeName = (typeof seedPropertyTypes)[number]['name']

export interface AttributeDefinition {
  name: string
  type: AttributeType
  /** What the attribute means, with its unit where it has one. */
  meaning: string
  /** For `enum` only: the exact allowed strings. */
  allowedValues?: readonly string[]
  /** The property types the attribute makes sense for; the internal check rejects it on others. */
  appliesTo: readonly PropertyTypeName[]
  /** Bounds for `number` and `integer` values. */
  min?: number
  max?: number
  /** For `number`: the most digits after the point it may have. */
  decimals?: number
}

/**
 * Areas are kept to the hundredth, as the catalogue's `area` column (numeric(12,2)) that filters
 * and sorts keep it and as feeds round them: a third decimal would show one area in `area` and
 * another in `attributes.area`.
 */
export const AREA_DECIMALS = 2
/**
 * A land area is in sotkas (100 m²): kept to the same hundredth of a m² as the others, so a plot
 * of 612.5 m² is 6.125 sotkas as written, not refused or rounded to 6.13. No column keeps it.
 */
export const LAND_AREA_DECIMALS = 4

/** The bounds of `integer` and `number` attributes that set none of their own: they keep values inside their columns. */
export const DEFAULT_ATTRIBUTE_MAX = { integer: 1_000_000, number: 1_000_000_000 } as const

/** The least and greatest value an `integer` or `number` attribute takes. */
export function boundsOf(definition: AttributeDefinition): { min: number; max: number } {
  return { min: definition.min ?? 0, max: definition.max ?? DEFAULT_ATTRIBUTE_MAX[definition.type === 'integer' ? 'integer' : 'number'] }
}

const ALL: readonly PropertyTypeName[] = ['Квартира', 'Дом', 'Таунхаус', 'Коммерция', 'Земля']
/** Anything with a building on it: `rooms` on Земля makes no sense. */
const BUILDINGS: readonly PropertyTypeName[] = ['Квартира', 'Дом', 'Таунхаус', 'Коммерция']
const RESIDENTIAL: readonly PropertyTypeName[] = ['Квартира', 'Дом', 'Таунхаус']
/** Construction of a detached building, which an apartment's owner does not sell. */
const HOUSES: readonly PropertyTypeName[] = ['Дом', 'Таунхаус', 'Коммерция']
const WITH_LAND: readonly PropertyTypeName[] = ['Дом', 'Таунхаус', 'Коммерция', 'Земля']
const COMMERCIAL: readonly PropertyTypeName[] = ['Коммерция']

export const attributeCatalogue: readonly AttributeDefinition[] = [
  { name: 'area', type: 'number', meaning: 'total area, m²', appliesTo: ALL, decimals: AREA_DECIMALS },
  { name: 'rooms', type: 'integer', meaning: 'number of rooms', appliesTo: BUILDINGS },
  { name: 'floor', type: 'integer', meaning: 'floor (negative for basements)', min: -10, appliesTo: BUILDINGS },
  { name: 'total_floors', type: 'integer', meaning: 'floors in the building', appliesTo: BUILDINGS },
  { name: 'kitchen_area', type: 'number', meaning: 'kitchen area, m²', appliesTo: RESIDENTIAL, decimals: AREA_DECIMALS },
  { name: 'living_area', type: 'number', meaning: 'living area, m²', appliesTo: RESIDENTIAL, decimals: AREA_DECIMALS },
  { name: 'ceiling_height', type: 'number', meaning: 'ceiling height, m', appliesTo: BUILDINGS },
  { name: 'year_built', type: 'integer', meaning: 'year built', appliesTo: BUILDINGS },
  { name: 'bedrooms', type: 'integer', meaning: 'number of bedrooms', appliesTo: RESIDENTIAL },
  {
    name: 'building_type',
    type: 'enum',
    meaning: 'building type',
    allowedValues: ['Панельный', 'Кирпичный', 'Монолит', 'Металлокаркас', 'Деревянный'],
    appliesTo: BUILDINGS,
  },
  {
    name: 'wall_material',
    type: 'enum',
    meaning: 'wall material',
    allowedValues: ['Кирпич', 'Газоблок', 'Дерево', 'СИП-панели', 'Каркас', 'Полистиролбетон'],
    appliesTo: HOUSES,
  },
  { name: 'foundation', type: 'enum', meaning: 'foundation', allowedValues: ['Ленточный', 'Плитный', 'Свайный'], appliesTo: HOUSES },
  { name: 'roof_type', type: 'enum', meaning: 'roof type', allowedValues: ['Плоская', 'Двускатная', 'Вальмовая'], appliesTo: HOUSES },
  { name: 'entrance', type: 'integer', meaning: 'entrance', appliesTo: BUILDINGS },
  {
    name: 'condition',
    type: 'enum',
    meaning: 'condition',
    allowedValues: ['Без ремонта', 'Косметический', 'Евроремонт', 'Дизайнерский'],
    appliesTo: BUILDINGS,
  },
  { name: 'furniture', type: 'enum', meaning: 'furniture', allowedValues: ['Без мебели', 'Частично', 'Полная'], appliesTo: BUILDINGS },
  { name: 'window_type', type: 'enum', meaning: 'windows', allowedValues: ['Пластиковые', 'Деревянные', 'Алюминиевые'], appliesTo: BUILDINGS },
  { name: 'area_land', type: 'number', meaning: 'land area, sotka', appliesTo: WITH_LAND, decimals: LAND_AREA_DECIMALS },
  { name: 'area_commercial', type: 'number', meaning: 'retail area, m²', appliesTo: COMMERCIAL, decimals: AREA_DECIMALS },
  { name: 'area_warehouse', type: 'number', meaning: 'warehouse area, m²', appliesTo: COMMERCIAL, decimals: AREA_DECIMALS },
  { name: 'bathroom', type: 'enum', meaning: 'bathroom', allowedValues: ['Совмещённый', 'Раздельный'], appliesTo: BUILDINGS },
  { name: 'bathroom_count', type: 'integer', meaning: 'number of bathrooms', appliesTo: BUILDINGS },
  { name: 'balcony', type: 'enum', meaning: 'balcony', allowedValues: ['Нет', 'Балкон', 'Лоджия', 'Терраса'], appliesTo: BUILDINGS },
  { name: 'balcony_glazed', type: 'bool', meaning: 'balcony glazed', appliesTo: BUILDINGS },
  { name: 'parking', type: 'enum', meaning: 'parking', allowedValues: ['Нет', 'Двор', 'Подземная', 'Гараж', 'Наземная'], appliesTo: ALL },
  { name: 'parking_count', type: 'integer', meaning: 'number of parking places', appliesTo: ALL },
  { name: 'heating_type', type: 'enum', meaning: 'heating', allowedValues: ['Центральное', 'Автономное', 'Нет'], appliesTo: BUILDINGS },
  { name: 'internet', type: 'enum', meaning: 'internet', allowedValues: ['Нет', 'Проводной', 'Оптика', 'DSL', 'Мобильный (4G/5G)'], appliesTo: ALL },
  { name: 'gas', type: 'enum', meaning: 'gas', allowedValues: ['Центральный', 'Баллон', 'Газгольдер', 'Нет'], appliesTo: ALL },
  { name: 'water', type: 'enum', meaning: 'water supply', allowedValues: ['Центральное', 'Скважина/колодец', 'Нет'], appliesTo: ALL },
  { name: 'sewage', type: 'enum', meaning: 'sewage', allowedValues: ['Центральная', 'Септик', 'Нет'], appliesTo: ALL },
  { name: 'electricity', type: 'enum', meaning: 'electricity', allowedValues: ['Есть', 'Рядом', 'Нет'], appliesTo: ALL },
  { name: 'electricity_power', type: 'integer', meaning: 'electric power, kW', appliesTo: ALL },
  { name: 'phone', type: 'bool', meaning: 'telephone line', appliesTo: ALL },
  { name: 'elevator', type: 'bool', meaning: 'elevator', appliesTo: BUILDINGS },
  { name: 'is_corner', type: 'bool', meaning: 'corner unit', appliesTo: BUILDINGS },
  { name: 'isolated_rooms', type: 'bool', meaning: 'isolated rooms', appliesTo: RESIDENTIAL },
  { name: 'storage', type: 'bool', meaning: 'storage room', appliesTo: BUILDINGS },
  { name: 'quiet_yard', type: 'bool', meaning: 'quiet yard', appliesTo: ALL },
  { name: 'kitchen_studio', type: 'bool', meaning: 'kitchen-studio', appliesTo: RESIDENTIAL },
  { name: 'new_plumbing', type: 'bool', meaning: 'new plumbing', appliesTo: BUILDINGS },
  { name: 'built_in_kitchen', type: 'bool', meaning: 'built-in kitchen', appliesTo: RESIDENTIAL },
  { name: 'security', type: 'bool', meaning: 'security', appliesTo: ALL },
  { name: 'security_intercom', type: 'bool', meaning: 'intercom', appliesTo: BUILDINGS },
  { name: 'security_video', type: 'bool', meaning: 'video surveillance', appliesTo: ALL },
  { name: 'security_alarm', type: 'bool', meaning: 'alarm', appliesTo: ALL },
  { name: 'security_fire_alarm', type: 'bool', meaning: 'fire alarm', appliesTo: BUILDINGS },
  { name: 'security_coded_lock', type: 'bool', meaning: 'coded lock', appliesTo: BUILDINGS },
  { name: 'security_concierge', type: 'bool', meaning: 'concierge', appliesTo: BUILDINGS },
  { name: 'commercial_type', type: 'enum', meaning: 'commercial purpose', allowedValues: ['Офис', 'Торговое', 'Склад', 'Производство'], appliesTo: COMMERCIAL },
  { name: 'has_showcase', type: 'bool', meaning: 'shop windows', appliesTo: COMMERCIAL },
  { name: 'separate_entrance', type: 'bool', meaning: 'separate entrance', appliesTo: BUILDINGS },
  { name: 'land_category', type: 'enum', meaning: 'land category', allowedValues: ['ИЖС', 'СНТ', 'ЛПХ', 'Коммерческое'], appliesTo: WITH_LAND },
  { name: 'land_status', type: 'enum', meaning: 'land status', allowedValues: ['В собственности', 'В аренде'], appliesTo: WITH_LAND },
  { name: 'communications_nearby', type: 'bool', meaning: 'utilities nearby', appliesTo: WITH_LAND },
  { name: 'road_access', type: 'enum', meaning: 'access road', allowedValues: ['Асфальт', 'Гравий', 'Грунтовая', 'Нет'], appliesTo: WITH_LAND },
  { name: 'is_pledged', type: 'bool', meaning: 'pledged', appliesTo: ALL },
  { name: 'is_installment', type: 'bool', meaning: 'instalment available', appliesTo: ALL },
  { name: 'is_exchange', type: 'bool', meaning: 'exchange possible', appliesTo: ALL },
  { name: 'is_privatized', type: 'bool', meaning: 'privatised', appliesTo: ALL },
  { name: 'documents_ready', type: 'bool', meaning: 'documents ready for deal', appliesTo: ALL },
  { name: 'encumbrance', type: 'bool', meaning: 'encumbrance', appliesTo: ALL },
  {
    name: 'ownership_type',
    type: 'enum',
    meaning: 'ownership type',
    allowedValues: ['Частная собственность', 'Долевая собственность', 'Государственная'],
    appliesTo: ALL,
  },
]

export const attributesByName: ReadonlyMap<string, AttributeDefinition> = new Map(attributeCatalogue.map((attribute) => [attribute.name, attribute]))
