/**
 * A compiled artifact's text: what libs/bundle's canonicalPretty writes (keys sorted by UTF-16 code
 * unit, two-space indent, one trailing newline), reached in one JSON.stringify instead of three
 * passes. Only for the JSON data compile builds itself: strings, finite numbers, booleans, arrays and
 * plain objects, with no undefined inside an array. A unit test holds the two together.
 */
export function sortedPretty(value: unknown): string {
  return `${JSON.stringify(sortKeys(value), null, 2)}\n`;
}

/**
 * The same text for data whose objects were built with their keys in that order already (keys that
 * look like array indices aside: JavaScript puts those first in any object). Undefined keys are left out.
 */
export function presortedPretty(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function sortKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(sortKeys);
  const record = value as Record<string, unknown>;
  // No prototype, so a key named __proto__ is a key like any other, as it is to JSON.parse.
  const out = Object.create(null) as Record<string, unknown>;
  // Keys that look like array indices still come first, in numeric order: JavaScript orders an
  // object's keys that way whatever order they are added in, as it did for canonicalPretty's parse.
  for (const k of Object.keys(record).sort()) if (record[k] !== undefined) out[k] = sortKeys(record[k]);
  return out;
}
