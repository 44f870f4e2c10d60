/**
 * What counts as nothing at either end of a text people typed or pasted: blanks and line breaks
 * (`\s`, the no-break space included) and characters that take no room on the page (zero-width
 * spaces and joiners, the byte order mark: `\p{Cf}`). `String.prototype.trim` keeps the latter,
 * so a name of one zero-width space would pass for a name.
 */
const NOTHING = /[\s\p{Cf}]/u

/**
 * The text without what counts as nothing at either end; '' for a text that is all of it.
 * Walks in from both ends (a regex anchored at the end would retry from every blank: quadratic).
 */
export function trimmedText(text: string): string {
  let start = 0
  let end = text.length
  while (start < end && NOTHING.test(text[start]!)) start++
  while (end > start && NOTHING.test(text[end - 1]!)) end--
  return text.slice(start, end)
}
