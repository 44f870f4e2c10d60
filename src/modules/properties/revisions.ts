/**
 * A revision is a change to a published listing that the internal check has not passed yet
 * (property_revisions): the listing's row keeps the approved version, which the catalogue
 * shows, and the agency sees the revision. These turn one into the other.
 */
import stringify from 'safe-stable-stringify'
import type { PropertyRow, RevisionFields } from '../../db/schema.js'
import { submittedColumnNames } from './properties.repository.js'

/** What an agency submits of a listing (its agency aside) and its owner: what a revision keeps. */
const revisionColumns = [
  ...submittedColumnNames.filter((column): column is Exclude<typeof column, 'tenantId'> => column !== 'tenantId'),
  'ownerId',
] as const satisfies readonly (keyof RevisionFields)[]

/** The submitted columns of a listing's row, as a revision keeps them. */
export function fieldsOf(row: PropertyRow): Required<RevisionFields> {
  return Object.fromEntries(revisionColumns.map((column) => [column, row[column]])) as Required<RevisionFields>
}

/** Whether two versions of a listing are the same submission (attributes compared by content). */
export function sameFields(a: RevisionFields, b: RevisionFields): boolean {
  return revisionColumns.every((column) => stringify(a[column] ?? null) === stringify(b[column] ?? null))
}

const numberOrNull = (value: unknown) => (value === undefined || value === null ? null : Number(value))
const integerOrNull = (value: unknown) => (value === undefined || value === null ? null : Math.trunc(Number(value)))

/**
 * The listing as its revision would make it: the row with the revision's columns, and the copies
 * the database keeps of some attributes (area, rooms, floors) taken from its attributes as the
 * generated columns would.
 */
export function withRevision(row: PropertyRow, fields: RevisionFields): PropertyRow {
  const attributes = fields.attributes ?? {}
  return {
    ...row,
    ...fields,
    attributes,
    area: numberOrNull(attributes['area']),
    rooms: integerOrNull(attributes['rooms']),
    floor: integerOrNull(attributes['floor']),
    totalFloors: integerOrNull(attributes['total_floors']),
  }
}
