/**
 * `compute` with its answers kept by the text it was given: for work done again and again on
 * the same few texts (a feed's place names, an agency's phones). At most `limit` are kept, then
 * all are forgotten at once, so a stream of texts never seen again costs what it did; a text
 * longer than `longest` is computed each time, never kept.
 */
export function remembered<T>(compute: (text: string) => T, limit = 10_000, longest = 200): (text: string) => T {
  const answers = new Map<string, T>()
  return (text) => {
    if (text.length > longest) return compute(text)
    if (answers.has(text)) return answers.get(text)!
    if (answers.size >= limit) answers.clear()
    const answer = compute(text)
    answers.set(text, answer)
    return answer
  }
}
