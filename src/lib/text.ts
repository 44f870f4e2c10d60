/**
 * What counts as nothing at either end of a text people typed or pasted: blanks and line breaks
 * (`\s`, the no-break space included) and characters that take no room on the page (zero-width
 * spaces and joiners, the byte order mark: `\p{Cf}`; control characters such as NEL: `\p{Cc}`).
 * `String.prototype.trim` keeps the latter, so a name of one zero-width space would pass for a name.
 */
const NOTHING = /[\s\p{Cf}\p{Cc}]/u

/**
 * The text without what counts as nothing at either end; '' for a text that is all of it.
 * Walks in from both ends (a regex anchored at the end would retry from every blank: quadratic).
 */
export function trimmedText(text: string): string {
  let start = 0
  let end = text.length
  // By characters, not UTF-16 units: a character past U+FFFF (a tag character, invisible too)
  // takes two, neither of which is nothing on its own.
  while (start < end) {
    const character = String.fromCodePoint(text.codePointAt(start)!)
    if (!NOTHING.test(character)) break
    start += character.length
  }
  while (end > start) {
    const last = text.charCodeAt(end - 1)
    const width = last >= 0xdc00 && last <= 0xdfff && end - 2 >= start ? 2 : 1
    if (!NOTHING.test(text.slice(end - width, end))) break
    end -= width
  }
  return text.slice(start, end)
}
