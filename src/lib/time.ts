/**
 * RFC 3339 with a numeric offset, `2026-11-22T09:15:02.123+00:00` (D2), for property and
 * tenant timestamps. Always UTC, so the offset is always +00:00.
 */
export function toOffsetTimestamp(date: Date): string {
  // toISOString always ends in `Z`; a slice costs a catalogue page less than a regex.
  return `${date.toISOString().slice(0, -1)}+00:00`
}

/** UTC ending in `Z`, `2026-11-22T09:15:02.123Z`, as §2.1 asks of image timestamps. */
export function toUtcTimestamp(date: Date): string {
  return date.toISOString()
}
