/**
 * RFC 3339 with a numeric offset, `2026-11-22T09:15:02.123+00:00`, for property and
 * tenant timestamps. Always UTC, so the offset is always +00:00.
 */
export function toOffsetTimestamp(date: Date): string {
  // toISOString always ends in `Z`; a slice costs a catalogue page less than a regex.
  return `${date.toISOString().slice(0, -1)}+00:00`
}

/** UTC ending in `Z`, `2026-11-22T09:15:02.123Z`, the form of image timestamps. */
export function toUtcTimestamp(date: Date): string {
  return date.toISOString()
}

/**
 * The offset form of a UTC time as PostgreSQL's JSON writes a `timestamp`: `2026-11-22T09:15:02.123456`,
 * its fraction trimmed of trailing zeros or absent. Milliseconds are cut, not rounded, as a
 * Date read from the database keeps them, so both ways give the same text.
 */
export function offsetTimestampFromUtcText(text: string): string {
  const milliseconds = text.length > 20 ? text.slice(20, 23).padEnd(3, '0') : '000'
  return `${text.slice(0, 19)}.${milliseconds}+00:00`
}
