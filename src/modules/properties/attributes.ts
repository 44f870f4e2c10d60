import type { AttributeValues } from '../../db/schema.js'
import { decimalPlaces } from '../../lib/decimals.js'
import type { FieldError } from '../../lib/errors.js'
import { attributesByName, boundsOf, type AttributeDefinition } from '../reference/attribute-catalogue.js'

const DECIMAL = /^-?\d+(\.\d+)?$/
const MAX_SIGNIFICANT_DIGITS = 15

/** The digits of a decimal text that say something: none of the zeros before the first other digit, or after the last. */
function significantDigits(text: string): number {
  return text.replace(/[-.]/g, '').replace(/^0+/, '').replace(/0+$/, '').length
}
const INTEGER = /^-?\d+$/

/**
 * Converts the submitted `attributes` (strings, as the interface sends them, or native JSON numbers and
 * booleans) into typed values by the catalogue. Every problem is reported, each naming the
 * attribute and, for lists, the allowed values.
 */
export function parseAttributes(input: Record<string, unknown>): { values: AttributeValues; errors: FieldError[] } {
  const values: AttributeValues = {}
  const errors: FieldError[] = []
  for (const [name, raw] of Object.entries(input)) {
    const definition = attributesByName.get(name)
    const loc = ['body', 'attributes', name]
    if (!definition) {
      errors.push({ loc, msg: `"${name}" is not a known attribute (see GET /attributes)` })
      continue
    }
    const parsed = parseValue(definition, raw)
    if (typeof parsed === 'object') errors.push({ loc, msg: parsed.problem })
    else values[name] = parsed
  }
  return { values, errors }
}

function parseValue(definition: AttributeDefinition, raw: unknown): string | number | boolean | { problem: string } {
  switch (definition.type) {
    case 'enum': {
      const allowed = definition.allowedValues ?? []
      if (typeof raw === 'string' && allowed.includes(raw)) return raw
      return { problem: `must be one of: ${allowed.map((value) => `"${value}"`).join(', ')}` }
    }
    case 'bool':
      if (raw === true || raw === 'true') return true
      if (raw === false || raw === 'false') return false
      return { problem: 'must be "true" or "false"' }
    case 'integer':
    case 'number': {
      const isInteger = definition.type === 'integer'
      const pattern = isInteger ? INTEGER : DECIMAL
      const value = typeof raw === 'number' ? raw : typeof raw === 'string' && pattern.test(raw) ? Number(raw) : Number.NaN
      const { min, max } = boundsOf(definition)
      // Well written, but too long to be a finite number: past the bound, not malformed.
      if (value === Infinity || value === -Infinity) return { problem: `must be from ${min} to ${max}` }
      if (!Number.isFinite(value) || (isInteger && !Number.isInteger(value))) {
        return { problem: isInteger ? 'must be a whole number, e.g. "3"' : 'must be a decimal number with a dot, e.g. "54.5"' }
      }
      // Text is judged as written: Number() rounds "54.999999999999999999" to 55, and
      // "1000000000.0000000000000001" to the maximum, before either could be counted.
      const [whole = '', fraction = ''] = typeof raw === 'string' ? raw.split('.') : []
      const places = typeof raw === 'string' ? fraction.replace(/0+$/, '').length : decimalPlaces(value)
      if (value < min || value > max || (places > 0 && Number(whole) >= max)) return { problem: `must be from ${min} to ${max}` }
      if (definition.decimals !== undefined && places > definition.decimals) {
        return { problem: `must have at most ${definition.decimals} decimal places` }
      }
      // A number is kept as a double, which holds any 15 significant digits exactly and no more:
      // "2.99999999999999999999" would be stored, and shown, as 3.
      if (typeof raw === 'string' && significantDigits(raw) > MAX_SIGNIFICANT_DIGITS) {
        return { problem: `must have at most ${MAX_SIGNIFICANT_DIGITS} significant digits, as it would otherwise be stored as another number` }
      }
      return value
    }
  }
}
