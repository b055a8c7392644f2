/**
 * A reader for the plain YAML a rete is written in, for speed: block mappings and sequences, one-line
 * flow collections, plain, single- and double-quoted scalars, comments. It gives the same value the
 * `yaml` package's `parseDocument(...).toJS()` gives (YAML 1.2, core schema), or nothing at all for a
 * text it does not read with certainty: anchors, aliases, tags, block scalars, multi-line scalars and
 * flow collections, explicit keys, quoted keys, several documents, numbers it would have to spell out
 * (`0x1F`, `1e3`, `0644`), a duplicate key, anything the package would call an error. The caller then
 * parses that text with the package, which says what and where any error is.
 *
 * Why: the package builds a concrete syntax tree and a document of nodes, each with its source range,
 * which is most of a large rete's compile (about 0.7 µs a byte, and three times that in a new process,
 * its code not yet compiled); a rete's files are long lists of the same few shapes.
 */

/** The value of a YAML text, or undefined where the text is one for the `yaml` package to read. */
export function readPlainYaml(text: string): { value: unknown } | undefined {
  return read(text, undefined);
}

/** Where a value was written: its first character's line and column, from 1. */
export interface PlainPlace {
  readonly line: number;
  readonly col: number;
}

/**
 * readPlainYaml, with where each value was written: `placeOf(path)` is where the `yaml` package's
 * node at that path begins (its range's start), or undefined for a path to nothing, to a null written
 * as nothing (whose place the package decides), or to the document itself.
 */
export function readPlainYamlPlaced(text: string): { value: unknown; placeOf(path: readonly PropertyKey[]): PlainPlace | undefined } | undefined {
  const places: Places = new WeakMap();
  const got = read(text, places);
  if (!got) return undefined;
  const { value } = got;
  return {
    value,
    placeOf(path) {
      let container: unknown = value;
      let place: PlainPlace | undefined;
      for (const seg of path) {
        if (container === null || typeof container !== 'object') return undefined;
        place = places.get(container)?.get(typeof seg === 'string' && Array.isArray(container) ? Number(seg) : seg);
        if (place === undefined) return undefined;
        container = (container as Record<PropertyKey, unknown>)[seg];
      }
      return place;
    },
  };
}

/** Each collection's values' places, by key or index (readPlainYamlPlaced). */
type Places = WeakMap<object, Map<PropertyKey, PlainPlace>>;

function read(text: string, places: Places | undefined): { value: unknown } | undefined {
  if (UNREAD.test(text)) return undefined;
  try {
    const reader = new BlockReader(text, places);
    return { value: reader.document() };
  } catch (e) {
    if (e === DECLINE) return undefined;
    throw e;
  }
}

/** Notes where `container`'s value at `key` begins, when places are kept. */
function place(places: Places | undefined, container: object, key: PropertyKey, line: number, col: number): void {
  if (!places) return;
  let kept = places.get(container);
  if (!kept) places.set(container, (kept = new Map()));
  kept.set(key, { line, col });
}

/** Characters the reader leaves to the package wherever they are: tabs, carriage returns, a BOM, controls, Unicode's line breaks. */
const UNREAD = /[\t\r\uFEFF\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u2028\u2029]/;

/**
 * The deepest nesting the reader reads, of block collections and, apart, of flow collections on a
 * line. The package refuses a text nested deeper than its stack allows, a depth that moves with the
 * stack and the compiler's state (600 to 800 flow collections in a new process): below it, so that
 * what the reader reads the package reads too, and so that the reader's own stack never runs out.
 */
const MAX_DEPTH = 64;

/** Thrown to give the text to the package. */
const DECLINE = Symbol('decline');

function decline(): never {
  throw DECLINE;
}

/**
 * A block key: what the reader takes as a key without asking how YAML would resolve it. Not longer
 * than 1,024 characters, which the package refuses in a block mapping.
 */
const KEY = /^([A-Za-z_][A-Za-z0-9_-]{0,1023}):(?: +|$)/;
/** Keys that YAML reads as a null or a boolean, or that an object cannot hold as its own. */
const SPECIAL_KEYS = new Set(['null', 'Null', 'NULL', 'true', 'True', 'TRUE', 'false', 'False', 'FALSE', '__proto__']);

/** A plain scalar's value that YAML 1.2's core schema reads as a number, in the forms the reader spells out. */
const DECIMAL = /^(?:0|-?[1-9][0-9]{0,14})$/;
/** Every other form the core schema reads as a null, a boolean or a number: left to the package. */
const CORE_SPECIAL =
  /^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
/** A first character that starts something other than a plain scalar (or may, by what follows it). */
const NOT_PLAIN_START = new Set(['?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', "'", '"', '%', '@', '`']);

/** A plain scalar's value: the core schema's null, booleans and decimal integers; any other special form declines. */
function plainValue(text: string): unknown {
  if (text === 'null' || text === '~') return null;
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (DECIMAL.test(text)) return Number(text);
  if (CORE_SPECIAL.test(text)) decline();
  return text;
}

interface Line {
  /** Where the line's content starts: its indentation. */
  indent: number;
  /** The line without its indentation. */
  content: string;
  /** Its number in the text, from 1. */
  number: number;
}

/** Reads the block structure line by line; a value on a line is read by readInline. */
class BlockReader {
  private readonly lines: Line[] = [];
  private at = 0;
  private depth = 0;

  constructor(
    text: string,
    private readonly places?: Places,
  ) {
    let number = 0;
    for (const raw of text.split('\n')) {
      number++;
      // Indentation is spaces only: not String.trimStart, which takes any Unicode space.
      const indent = spacesFrom(raw, 0);
      const content = raw.slice(indent);
      if (spacesFrom(content, 0) === content.length || content.startsWith('#')) continue;
      if (raw.startsWith('---') || raw.startsWith('...') || raw.startsWith('%')) decline();
      this.lines.push({ indent, content, number });
    }
  }

  document(): unknown {
    if (this.lines.length === 0) return null;
    if (this.lines[0].indent !== 0) decline();
    const value = this.block(0);
    if (this.at !== this.lines.length) decline();
    return value;
  }

  /** The collection whose first line is the current one, at `indent`. */
  private block(indent: number): unknown {
    return isItem(this.lines[this.at].content) ? this.sequence(indent) : this.mapping(indent);
  }

  private mapping(indent: number): Record<string, unknown> {
    if (++this.depth > MAX_DEPTH) decline();
    const map: Record<string, unknown> = {};
    while (this.at < this.lines.length) {
      const line = this.lines[this.at];
      if (line.indent < indent) break;
      if (line.indent > indent || isItem(line.content)) decline();
      const key = KEY.exec(line.content);
      if (!key || SPECIAL_KEYS.has(key[1]) || Object.hasOwn(map, key[1])) decline();
      const rest = line.content.slice(key[0].length);
      this.at++;
      if (rest === '' || rest.startsWith('#')) map[key[1]] = this.nested(map, key[1], indent, true);
      else {
        place(this.places, map, key[1], line.number, indent + key[0].length + 1);
        map[key[1]] = readInline(rest, line.number, indent + key[0].length, this.places);
      }
    }
    this.depth--;
    return map;
  }

  private sequence(indent: number): unknown[] {
    if (++this.depth > MAX_DEPTH) decline();
    const list: unknown[] = [];
    while (this.at < this.lines.length) {
      const line = this.lines[this.at];
      // A key at the sequence's indentation ends it: the sequence was that of a key at the same indentation.
      if (line.indent < indent || (line.indent === indent && !isItem(line.content))) break;
      if (line.indent > indent) decline();
      const rest = line.content.slice(spacesFrom(line.content, 1));
      const column = line.indent + line.content.length - rest.length;
      if (rest === '' || rest.startsWith('#')) {
        this.at++;
        list.push(this.nested(list, list.length, indent, false));
      } else if (isItem(rest)) {
        decline();
      } else if (KEY.test(rest)) {
        // A mapping begun on the item's line: its keys are at the column of the first one.
        this.lines[this.at] = { indent: column, content: rest, number: line.number };
        place(this.places, list, list.length, line.number, column + 1);
        list.push(this.mapping(column));
      } else {
        this.at++;
        place(this.places, list, list.length, line.number, column + 1);
        list.push(readInline(rest, line.number, column, this.places));
      }
    }
    this.depth--;
    return list;
  }

  /**
   * The value of a key or an item written on the lines after it (`container`'s at `key`): a
   * collection indented further, a sequence at the key's own indentation (a mapping's value only), or
   * else null.
   */
  private nested(container: object, key: PropertyKey, indent: number, ofKey: boolean): unknown {
    const next = this.lines[this.at];
    if (!next) return null;
    const placed = () => place(this.places, container, key, next.number, next.indent + 1);
    if (next.indent > indent) {
      placed();
      return this.block(next.indent);
    }
    if (ofKey && next.indent === indent && isItem(next.content)) {
      placed();
      return this.sequence(indent);
    }
    return null;
  }
}

/** Where the spaces from `at` end. */
function spacesFrom(text: string, at: number): number {
  while (text.charCodeAt(at) === 32) at++;
  return at;
}

/** Whether a line's content is a block sequence's item. */
function isItem(content: string): boolean {
  return content.startsWith('-') && (content.length === 1 || content[1] === ' ');
}

/**
 * A value written after a key or an item marker on one line, with nothing but a comment after it;
 * `line` and `column` (from 0) are where `text` begins, for the places of a flow collection's values.
 */
function readInline(text: string, line: number, column: number, places: Places | undefined): unknown {
  const scanner = new InlineScanner(text, line, column, places);
  const value = scanner.value(false);
  scanner.end();
  return value;
}

/** Reads a value from one line: a scalar or a flow collection, which must close on the same line. */
class InlineScanner {
  private at = 0;
  private depth = 0;

  constructor(
    private readonly text: string,
    private readonly line: number,
    private readonly column: number,
    private readonly places: Places | undefined,
  ) {}

  /** The value starting here; `flow` inside a flow collection, where `,`, `]` and `}` end a plain scalar. */
  value(flow: boolean): unknown {
    const c = this.text[this.at];
    if (c === '[') return this.flowSequence();
    if (c === '{') return this.flowMapping();
    if (c === '"' || c === "'") return this.quoted();
    return this.plain(flow);
  }

  /** Nothing but spaces and a comment may follow the value. */
  end(): void {
    this.spaces();
    if (this.at < this.text.length && this.text[this.at] !== '#') decline();
    // A comment needs a space before it ("a#b" is a scalar, read as such by plain()).
    if (this.at < this.text.length && this.text[this.at - 1] !== ' ') decline();
  }

  private spaces(): void {
    this.at = spacesFrom(this.text, this.at);
  }

  private plain(flow: boolean): unknown {
    const start = this.at;
    const first = this.text[start];
    if (first === undefined || NOT_PLAIN_START.has(first)) decline();
    // "-" starts a plain scalar only before a character that could not end one.
    const second = this.text[start + 1];
    if (first === '-' && (second === undefined || second === ' ' || (flow && FLOW_INDICATORS.has(second)))) decline();
    let end = start;
    for (;;) {
      const c = this.text[end];
      if (c === undefined) break;
      if (c === '#' && this.text[end - 1] === ' ') break;
      if (c === ':') {
        const after = this.text[end + 1];
        // ": " or a closing ":" makes a key here: left to the package.
        if (after === undefined || after === ' ' || (flow && (after === ',' || after === ']' || after === '}'))) decline();
      }
      if (flow && (c === ',' || c === ']' || c === '}')) break;
      if (flow && (c === '[' || c === '{')) decline();
      end++;
    }
    this.at = end;
    // Without the spaces before a comment or a flow indicator (not String.trimEnd: any Unicode space).
    while (end > start && this.text.charCodeAt(end - 1) === 32) end--;
    return plainValue(this.text.slice(start, end));
  }

  /** A quoted scalar on one line: double-quoted with the escapes of ESCAPES, single-quoted with '' for a quote. */
  private quoted(): string {
    const quote = this.text[this.at];
    let out = '';
    let i = this.at + 1;
    for (;;) {
      const c = this.text[i];
      if (c === undefined) decline();
      if (c === quote) {
        if (quote === '"' || this.text[i + 1] !== "'") break;
        out += "'";
        i += 2;
      } else if (c === '\\' && quote === '"') {
        const escaped = ESCAPES.get(this.text[i + 1]);
        if (escaped === undefined) decline();
        out += escaped;
        i += 2;
      } else {
        out += c;
        i++;
      }
    }
    this.at = i + 1;
    return out;
  }

  /**
   * A flow collection on one line, from its opening bracket to `close`: `entry` reads each entry. A
   * trailing comma or an empty entry is left to the package.
   */
  private flow(close: string, entry: () => void): void {
    if (++this.depth > MAX_DEPTH) decline();
    this.at++;
    this.spaces();
    if (this.text[this.at] === close) {
      this.at++;
      this.depth--;
      return;
    }
    for (;;) {
      this.spaces();
      entry();
      this.spaces();
      const c = this.text[this.at++];
      if (c === close) {
        this.depth--;
        return;
      }
      if (c !== ',') decline();
      this.spaces();
      if (this.text[this.at] === close || this.text[this.at] === ',') decline();
    }
  }

  private flowSequence(): unknown[] {
    const list: unknown[] = [];
    this.flow(']', () => {
      place(this.places, list, list.length, this.line, this.column + this.at + 1);
      list.push(this.value(true));
    });
    return list;
  }

  private flowMapping(): Record<string, unknown> {
    const map: Record<string, unknown> = {};
    this.flow('}', () => {
      FLOW_KEY.lastIndex = this.at;
      const key = FLOW_KEY.exec(this.text);
      if (!key || SPECIAL_KEYS.has(key[1]) || Object.hasOwn(map, key[1])) decline();
      this.at += key[0].length;
      place(this.places, map, key[1], this.line, this.column + this.at + 1);
      map[key[1]] = this.value(true);
    });
    return map;
  }
}
/** The characters that end a plain scalar inside a flow collection. */
const FLOW_INDICATORS = new Set([',', '[', ']', '{', '}']);

/** A key in a flow mapping, with the ": " after it, where the reader is (sticky). */
const FLOW_KEY = /([A-Za-z_][A-Za-z0-9_-]*): +/y;

/** The escapes of a double-quoted scalar the reader knows; any other declines. */
const ESCAPES = new Map([
  ['n', '\n'],
  ['t', '\t'],
  ['\\', '\\'],
  ['"', '"'],
  ['/', '/'],
  ['0', '\0'],
  ['r', '\r'],
]);
