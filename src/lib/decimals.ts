/**
 * The digits a number has after the point, from its shortest decimal form, which JSON parsing
 * round-trips (`multipleOf: 0.01` cannot tell: in binary 1234567.89 / 0.01 is 123456788.99999999).
 */
export function decimalPlaces(value: number): number {
  const [mantissa = '', exponent = '0'] = String(value).split('e')
  const fraction = mantissa.split('.')[1]?.length ?? 0
  return Math.max(0, fraction - Number(exponent))
}

/**
 * A number as a path or a query writes it: decimal digits, a point and an exponent at most, as
 * people and clients write it. What JavaScript would also read (`0x10`, ` 5`, `+5`, `.5`) is not.
 */
export const DECIMAL_NUMBER_TEXT = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/
