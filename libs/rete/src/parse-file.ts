import { isMap, isNode, isPair, isScalar, isSeq, LineCounter, parseAllDocuments, parseDocument, visit, type Document, type Node as YamlNode } from 'yaml';
import { ReteFile, type ReteErrorCode } from '#contracts/files';
import { sha256Hex } from '#bundle';
import { quoteValue, type Diagnostic, type Place } from './diagnostics.js';
import { pathText } from './path-text.js';
import { readPlainYaml, readPlainYamlPlaced } from './plain-yaml.js';
import { decodeUtf8 } from './utf8.js';

/**
 * One YAML file of the rete: a path relative to the rete root and its text, or its bytes as read from
 * disk, which must be UTF-8. A file's reader may know the sha256 of its bytes already (`digest`): then
 * a cached file's bytes are read only if a place in it is asked for.
 */
export type Source = { readonly file: string; readonly text: string } | { readonly file: string; readonly bytes: Uint8Array; readonly digest?: string };

/** A parsed file that knows where each of its values came from. */
export interface ParsedFile {
  readonly file: string;
  readonly data: ReteFile;
  placeOf(path: readonly PropertyKey[]): Place;
}

/** A definition taken from a parsed file, with where it was written. */
export interface Def<T> {
  readonly value: T;
  readonly file: ParsedFile;
  readonly path: readonly PropertyKey[];
  readonly place: Place;
}

/**
 * The data of files parsed before, by the sha256 of their bytes (the UTF-8 of a text source): a file
 * whose bytes are the same parses to the same data, so it is not parsed again. Only files that parse
 * without an error are kept. The caller decides where it lives and that it is the same parser's.
 */
export interface ParseCache {
  get(digest: string): ReteFile | undefined;
  set(digest: string, data: ReteFile): void;
}

/**
 * Parses one file: YAML syntax first (nothing else is checked in a file that does not parse), then the
 * ReteFile schema, with every zod issue mapped back to the YAML node it is about. With a cache, a
 * file it holds is not parsed, and the places of a file that parses are found by parsing it again
 * only when one is read (to report a problem): a rete whose files did not change costs no YAML
 * parsing at all, and a large one is never all in memory as YAML documents.
 */
export function parseFile(source: Source, cache?: ParseCache): { parsed?: ParsedFile; diagnostics: Diagnostic[] } {
  if (!cache) return parseNow(source);
  const digest = 'bytes' in source ? (source.digest ?? sha256Hex(source.bytes)) : sha256Hex(source.text);
  const data = cache.get(digest);
  if (data) return { parsed: placedLater(source, data), diagnostics: [] };
  const result = parseNow(source);
  if (!result.parsed) return result;
  cache.set(digest, result.parsed.data);
  // Not holding on to the parsed document: a rete of many large files would keep every one in memory
  // for places that are read only to report a problem.
  return { parsed: placedLater(source, result.parsed.data), diagnostics: result.diagnostics };
}

/**
 * A file's data, with places found by reading the file once more, the first time one is read: by the
 * plain reader when it reads the file and the path leads to a value it placed (the place is where the
 * `yaml` package's node begins, as its tests check), else by the package's document.
 */
function placedLater(source: Source, data: ReteFile): ParsedFile {
  let plain: ReturnType<typeof readPlainYamlPlaced> | null | undefined;
  let parsed: ParsedFile | undefined;
  const place = (path: readonly PropertyKey[]): Place => {
    if (plain === undefined) {
      const text = 'bytes' in source ? decodeUtf8(source.bytes) : { ok: true as const, text: source.text };
      plain = (text.ok && readPlainYamlPlaced(text.text)) || null;
    }
    const found = plain?.placeOf(path);
    if (found) return { file: source.file, line: found.line, col: found.col };
    parsed ??= parseNow(source, true).parsed;
    return parsed?.placeOf(path) ?? { file: source.file, line: 1, col: 1 };
  };
  return {
    file: source.file,
    data,
    placeOf: (path) => ({
      file: source.file,
      get line() {
        return place(path).line;
      },
      get col() {
        return place(path).col;
      },
    }),
  };
}

/**
 * Parses one file now. `places`: with the yaml package's document, whose nodes know where they were
 * written, for a file whose places are asked for.
 */
function parseNow(source: Source, places = false): { parsed?: ParsedFile; diagnostics: Diagnostic[] } {
  let text: string;
  if ('bytes' in source) {
    const decoded = decodeUtf8(source.bytes);
    if (!decoded.ok) return { diagnostics: [notUtf8(source.file, source.bytes, decoded.offset, decoded.before)] };
    text = decoded.text;
  } else text = source.text;
  // A text of plain YAML is read without the yaml package's document (readPlainYaml); one that does not
  // pass the schema is parsed again below, for the places of its problems. `packages` is left to the
  // package: its versions are kept as written (keepPackageVersionsAsWritten).
  const plain = places || text.includes('packages') ? undefined : readPlainYaml(text);
  if (plain) {
    const result = ReteFile.safeParse(plain.value ?? {});
    if (result.success) return { parsed: placedLater(source, result.data), diagnostics: [] };
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, strict: true });
  const at = (offset: number): Place => {
    const { line, col } = lineCounter.linePos(offset);
    return { file: source.file, line, col };
  };
  const diagnostics: Diagnostic[] = [];
  const report = (code: ReteErrorCode, place: Place, path: readonly PropertyKey[], message: string) =>
    diagnostics.push({ severity: 'error', code, ...place, path: pathText(path), message });

  for (const e of doc.errors) {
    if (e.code === 'MULTIPLE_DOCS') {
      // The parser's own words send the user to an API call; say what the rete allows instead.
      const found = parseAllDocuments(text).length;
      report('yaml_syntax', at(e.pos[0]), [], `a rete file holds one YAML document; found ${found} (separated by ---)`);
    } else report(e.code === 'DUPLICATE_KEY' ? 'duplicate_key' : 'yaml_syntax', at(e.pos[0]), [], firstLine(e.message));
  }
  if (diagnostics.length > 0) return { diagnostics };

  // Only a file that names `packages` can hold one: literally, or spelled with a double-quoted escape.
  if (text.includes('packages') || text.includes('\\')) keepPackageVersionsAsWritten(doc);
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 }) ?? {};
  } catch (e) {
    report('yaml_syntax', at(0), [], firstLine((e as Error).message));
    return { diagnostics };
  }

  const placeOf = (path: readonly PropertyKey[]): Place => {
    for (let n = path.length; n >= 0; n--) {
      const node = nodeAt(doc, path.slice(0, n));
      if (node?.range) return at(node.range[0]);
    }
    return at(0);
  };

  const result = ReteFile.safeParse(data);
  if (result.success) return { parsed: { file: source.file, data: result.data, placeOf }, diagnostics };

  for (const issue of result.error.issues) {
    const path = issue.path;
    if (issue.code === 'unrecognized_keys') {
      const map = path.length === 0 ? doc.contents : nodeAt(doc, path);
      for (const key of issue.keys) {
        const pair = isMap(map) ? map.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === key) : undefined;
        const keyNode = pair && isNode(pair.key) ? pair.key : undefined;
        const place = keyNode?.range ? at(keyNode.range[0]) : placeOf(path);
        report('unknown_key', place, [...path, key], `unknown key ${quoteValue(key)}${suggest(key, KNOWN_KEYS)}`);
      }
      continue;
    }
    const value = valueAt(data, path);
    if ((issue.code === 'invalid_type' || issue.code === 'invalid_value') && value === undefined) {
      report('missing_key', placeOf(path.slice(0, -1)), path, `missing required key "${String(path[path.length - 1])}"`);
      continue;
    }
    const place = placeOf(path);
    switch (issue.code) {
      case 'invalid_type':
        report(
          'wrong_type',
          place,
          path,
          path.length === 0
            ? 'a rete file must be a mapping of sections (mesh, defaults, nodes, groups, acl, resources, rollout)'
            : `must be ${article(issue.expected)}, not ${describe(value)}`,
        );
        break;
      case 'invalid_value':
        report('invalid_value', place, path, `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, not ${describe(value)}`);
        break;
      case 'too_small':
        report('invalid_value', place, path, 'must not be empty');
        break;
      case 'custom':
        report(
          (issue.params as { code?: ReteErrorCode } | undefined)?.code ?? 'invalid_value',
          place,
          path,
          `${issue.message}${typeof value === 'string' ? ` (got ${quoteValue(value)})` : ''}`,
        );
        break;
      default:
        report('invalid_value', place, path, issue.message);
    }
  }
  return { diagnostics };
}

/**
 * A package version is text, but YAML reads an unquoted `1.0` as the number 1 and `1.10` as 1.1:
 * another version, or one apt does not have. So the `version` of an entry of a `packages` list that
 * is written unquoted and reads as a number keeps the text as written, as if it were quoted; it is
 * then checked as a Debian version like any other. Nothing else in the file changes.
 */
function keepPackageVersionsAsWritten(doc: Document): void {
  visit(doc, {
    Pair(_, pair, path) {
      const [packages, list] = [path[path.length - 3], path[path.length - 2]];
      const inPackages = isPair(packages) && isScalar(packages.key) && packages.key.value === 'packages' && isSeq(list);
      if (!inPackages || !isScalar(pair.key) || pair.key.value !== 'version') return;
      const value = pair.value;
      if (isScalar(value) && value.type === 'PLAIN' && typeof value.value === 'number' && value.source !== undefined) value.value = value.source;
    },
  });
}

function notUtf8(file: string, bytes: Uint8Array, offset: number, before: string): Diagnostic {
  const line = before.split('\n').length;
  const col = before.length - before.lastIndexOf('\n');
  const byte = `0x${bytes[offset].toString(16).padStart(2, '0')}`;
  return { severity: 'error', code: 'not_utf8', file, line, col, path: '', message: `not valid UTF-8: byte ${byte} at offset ${offset}` };
}

function nodeAt(doc: Document, path: readonly PropertyKey[]): YamlNode | undefined {
  if (path.length === 0) return isNode(doc.contents) ? doc.contents : undefined;
  const node = doc.getIn(path as unknown[], true);
  return isNode(node) ? node : undefined;
}

function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = data;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[seg];
  }
  return v;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Uint8Array) return 'binary data';
  switch (typeof value) {
    case 'string':
      return `the string ${quoteValue(value)}`;
    case 'number':
      return Number.isInteger(value) ? `the number ${value}` : `the fraction ${value}`;
    case 'boolean':
      return `the boolean ${value}`;
    case 'object':
      return 'a mapping';
    default:
      return typeof value;
  }
}

function article(expected: string): string {
  switch (expected) {
    case 'object':
      return 'a mapping';
    case 'array':
      return 'a list';
    case 'int':
      return 'a whole number';
    default:
      return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
  }
}

const KNOWN_KEYS = [
  'mesh',
  'defaults',
  'nodes',
  'groups',
  'acl',
  'name',
  'coordinator',
  'safety_net',
  'sync',
  'poll_interval',
  'splay',
  'watch',
  'kind',
  'listen',
  'tags',
  'services',
  'description',
  'port',
  'protocol',
  'members',
  'from',
  'to',
  'resources',
  'select',
  'files',
  'packages',
  'path',
  'content',
  'source',
  'mode',
  'owner',
  'group',
  'version',
  'manager',
  'rollout',
  'canary',
  'waves',
  'bake',
  'failure_budget',
  'confirm_share',
  'on_halt',
];

/** "did you mean" for one-letter slips such as `listn` or `membres`. */
function suggest(key: string, known: readonly string[]): string {
  let best: string | undefined;
  let bestDistance = 3;
  for (const k of known) {
    if (k === key) continue;
    const d = distance(key, k);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best ? ` (did you mean "${best}"?)` : '';
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length];
}

function firstLine(message: string): string {
  return message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
}
