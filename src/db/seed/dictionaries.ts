/**
 * The fixed dictionaries. Their ids are part of the public contract
 * (clients filter by `property_type_id`, `deal_type_id`, `status_id`): never renumber.
 */
export const seedPropertyTypes = [
  { id: 1, name: 'Квартира' },
  { id: 2, name: 'Дом' },
  { id: 3, name: 'Таунхаус' },
  { id: 4, name: 'Коммерция' },
  { id: 5, name: 'Земля' },
] as const

export const seedDealTypes = [
  { id: 1, name: 'Продажа' },
  { id: 2, name: 'Долгосрочная аренда' },
  { id: 3, name: 'Посуточная аренда' },
] as const

export const seedPropertyStatuses = [
  { id: 1, code: 'pending_review', name: 'На проверке' },
  { id: 2, code: 'published', name: 'Опубликовано' },
  { id: 3, code: 'rejected', name: 'Отклонено' },
  { id: 4, code: 'withdrawn', name: 'Снято с публикации' },
  { id: 5, code: 'closed', name: 'Сделка закрыта' },
] as const
