/**
 * Canonical JSON: for JSON data, the JSON Canonicalization Scheme of RFC 8785 (JCS), byte for byte:
 * object keys sorted by UTF-16 code unit, no insignificant whitespace, strings and numbers as
 * JSON.stringify writes them (docs/decisions/0011-canonical-json-is-jcs.md says what it does with
 * anything else). Digests and the ledger's hash chain are computed over this form, so it must be
 * byte-stable on every machine and in every release.
 */
export function canonicalJson(value: unknown): string {
  // Data already in canonical order (as the ledger's own events are built) is written by the
  // runtime's serialiser, which writes the very same text faster than the walk below.
  if (inCanonicalOrder(value)) return JSON.stringify(value);
  try {
    return written(value, null);
  } catch {
    // Only to say where: the same walk again, keeping each value's path, refuses the same value naming it.
    return written(value, '$');
  }
}

/**
 * Whether JSON.stringify writes `value` canonically: it is JSON data (strings, finite numbers,
 * booleans, null, arrays without holes or undefined, and plain objects, whose undefined properties
 * both leave out), and every object's keys are already in canonical order, which is the order
 * JSON.stringify writes them in. Anything else (a toJSON, a boxed string, a class instance, an
 * integer-like key, which objects list first) goes the general way, which writes it or says where
 * it cannot.
 */
function inCanonicalOrder(value: unknown): boolean {
  if (value === null) return true;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (Array.isArray(value)) {
        // An array of a class of its own may have a toJSON.
        if (Object.getPrototypeOf(value) !== Array.prototype) return false;
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          if (!inCanonicalOrder(item)) return false;
        }
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      let previous: string | null = null;
      // for...in lists own keys first, in Object.keys' order; an enumerable key inherited from a
      // tampered Object.prototype would come after them, and only send the value the general way.
      for (const key in value) {
        if (previous !== null && !(previous < key)) return false;
        previous = key;
        const item: unknown = (value as Record<string, unknown>)[key];
        if (item !== undefined && !inCanonicalOrder(item)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

/**
 * The canonical text of `value`; `path`, where it is (null: not kept). A ledger append serialises
 * every event it chains, and a path string made for every value, to be read only in an error, was
 * most of the garbage: the first walk keeps none, and only a refused value is walked again with them.
 */
function written(value: unknown, path: string | null): string {
  const at = path === null ? '' : ` at ${path}`;
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: non-finite number${at}`);
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        let text = '[';
        for (let i = 0; i < value.length; i++) text += `${i ? ',' : ''}${written(value[i], path === null ? null : `${path}[${i}]`)}`;
        return `${text}]`;
      }
      const keys = Object.keys(value).sort();
      let text = '{';
      for (const k of keys) {
        const v = (value as Record<string, unknown>)[k];
        if (v !== undefined) text += `${text.length > 1 ? ',' : ''}${JSON.stringify(k)}:${written(v, path === null ? null : `${path}.${k}`)}`;
      }
      return `${text}}`;
    }
    default:
      throw new TypeError(`canonicalJson: unsupported ${typeof value}${at}`);
  }
}

/**
 * The on-disk form of a compiled artifact: canonical, pretty-printed with 2 spaces, trailing newline.
 * Not JCS: keys that look like array indices come first, in numeric order, as JavaScript orders them.
 */
export function canonicalPretty(value: unknown): string {
  return `${JSON.stringify(JSON.parse(canonicalJson(value)), null, 2)}\n`;
}
