import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { isNode, LineCounter, parseDocument, stringify } from 'yaml';
import { readPlainYaml, readPlainYamlPlaced } from './plain-yaml.js';
import { fleetRete } from './testing/fleet-rete.js';

/** What parse-file reads with the `yaml` package: the value, or an error if the package found one. */
function byPackage(text: string): { value: unknown } | { error: string } {
  const doc = parseDocument(text, { prettyErrors: false, strict: true });
  if (doc.errors.length > 0) return { error: doc.errors[0].message };
  try {
    return { value: doc.toJS({ maxAliasCount: 100 }) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/** Places the placed reader gave, and paths it left to the package (a null written as nothing): counted over a test's texts. */
const placeCounts = { given: 0, left: 0 };

/**
 * The reader's one promise: for any text, it gives the value the package gives, in the same key
 * order, or it declines. It never reads a text the package refuses. Read with places, it gives the
 * same value, and for every path into it either the place where the package's node begins or none.
 */
function agrees(text: string): 'read' | 'declined' {
  const ours = readPlainYaml(text);
  const placed = readPlainYamlPlaced(text);
  expect(placed === undefined).toBe(ours === undefined);
  if (ours === undefined || placed === undefined) return 'declined';
  const theirs = byPackage(text);
  if ('error' in theirs) throw new Error(`read a text the package refuses (${theirs.error}):\n${text}`);
  if (!isDeepStrictEqual(ours.value, theirs.value) || JSON.stringify(ours.value) !== JSON.stringify(theirs.value)) {
    throw new Error(`read ${JSON.stringify(ours.value)} where the package reads ${JSON.stringify(theirs.value)}:\n${text}`);
  }
  expect(placed.value).toEqual(ours.value);
  placesAgree(text, placed);
  return 'read';
}

/** Every path into the value the placed reader gives leads to the place where the package's node begins, or to none. */
function placesAgree(text: string, placed: NonNullable<ReturnType<typeof readPlainYamlPlaced>>): void {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, strict: true });
  const walk = (value: unknown, path: PropertyKey[]) => {
    if (path.length > 0) {
      const ours = placed.placeOf(path);
      const node = doc.getIn(path as unknown[], true);
      if (ours === undefined) {
        placeCounts.left++;
        // Only a null written as nothing is left to the package.
        expect([path, value]).toEqual([path, null]);
      } else {
        placeCounts.given++;
        const start = isNode(node) ? node.range?.[0] : undefined;
        if (start === undefined) throw new Error(`placed ${JSON.stringify(path)} where the package has no node:\n${text}`);
        const theirs = lineCounter.linePos(start);
        if (ours.line !== theirs.line || ours.col !== theirs.col)
          throw new Error(`placed ${JSON.stringify(path)} at ${ours.line}:${ours.col}, the package at ${theirs.line}:${theirs.col}:\n${text}`);
      }
    }
    if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, [...path, Array.isArray(value) ? Number(k) : k]);
  };
  walk(placed.value, []);
}

/** Scalars as a rete's files write them. */
const PLAIN = [
  'web',
  'node-049001',
  '10.0.191.104:7946',
  'tag:site-50-monitor',
  'node-1:metrics',
  '/etc/motd',
  'https://c.example:8443/x',
  '5m',
  '1h30m',
  '644',
  '0',
  '-7',
  '9100',
  '123456789012345',
  'true',
  'false',
  'null',
  '~',
  'a#b',
  'a b  c',
  'café',
  'a\u00a0b',
  '-a',
  '"quoted"',
  '"with # hash"',
  '"esc\\n\\t\\\\\\""',
  "'single'",
  "'it''s'",
  "'a # b'",
  '""',
  "''",
  'constructor',
  'yes',
  'no',
  'on',
  'y',
  '2001-12-14',
];
/** Forms YAML reads as something other than their text, or not at all. */
const ODD = [
  'a,b',
  'a[1]',
  '[::1]:7946',
  '0644',
  '-0',
  '+7',
  '1234567890123456',
  '1.0',
  '1.10',
  '.5',
  '1e3',
  '1E-3',
  '0x1F',
  '0o17',
  '0b1',
  '.inf',
  '-.Inf',
  '.NaN',
  'True',
  'TRUE',
  'Null',
  '12:30:45',
  '1:20',
  'a #b',
  'a: b',
  'a:b',
  'a:',
  '- a',
  '-',
  '?a',
  '? a',
  ':a',
  '!a',
  '&a',
  '*a',
  '%a',
  '@a',
  '`a',
  '|',
  '>',
  '\u00a0a',
  'x]',
  '{a}',
  '"bad \\x41"',
  '"\\u00e9"',
  '"unclosed',
  "'unclosed",
  '__proto__',
  '[a, b,]',
  '[a,,b]',
  '[a',
  '{a: 1',
  '[a: 1]',
  '{a: }',
];
const PLAIN_KEYS = ['name', 'kind', 'listen', 'tags', 'services', 'port', 'a', 'b_c', 'd-e', 'x1', 'Yes', 'on'];
const ODD_KEYS = ['true', 'null', '__proto__', '"q"', "'q'", '1', 'a b', 'k:', '? k', '-k', '&a k'];

/** One of `plain`, or with `odd`, now and then one of `odd`. */
function pick(odd: boolean, plain: readonly string[], oddOnes: readonly string[]): fc.Arbitrary<string> {
  if (!odd) return fc.constantFrom(...plain);
  return fc.oneof({ weight: 15, arbitrary: fc.constantFrom(...plain) }, { weight: 1, arbitrary: fc.constantFrom(...oddOnes) });
}

/**
 * YAML texts of the shapes a rete's files take: block mappings and sequences nested, one-line flow
 * collections, comments and blank lines. Without `odd`, each is YAML the package reads; with it, now and
 * then a scalar, key, separator or comment that YAML reads otherwise or refuses.
 */
function yamlTexts(odd: boolean): fc.Arbitrary<string> {
  const scalar = pick(odd, PLAIN, ODD);
  const key = pick(odd, PLAIN_KEYS, ODD_KEYS);
  const separator = pick(odd, [': ', ':  '], [':', ':\u00a0']);
  const comment = pick(odd, ['', '', '', ' # note', '  #x'], ['#glued']);
  const flowSep = fc.constantFrom(', ', ',', ' , ');

  const inline = (depth: number): fc.Arbitrary<string> =>
    depth === 0
      ? scalar
      : fc.oneof(
          { weight: 6, arbitrary: scalar },
          {
            weight: 1,
            arbitrary: fc
              .tuple(fc.array(inline(depth - 1), { maxLength: 4 }), flowSep, fc.boolean())
              .map(([xs, s, sp]) => (sp ? `[ ${xs.join(s)} ]` : `[${xs.join(s)}]`)),
          },
          {
            weight: 1,
            arbitrary: fc
              .tuple(fc.uniqueArray(fc.tuple(key, separator, inline(depth - 1)), { maxLength: 3, selector: ([k]) => k }), flowSep)
              .map(([pairs, s]) => `{ ${pairs.map(([k, c, v]) => `${k}${c}${v}`).join(s)} }`),
          },
        );

  const block = (depth: number, indent: number): fc.Arbitrary<string[]> => {
    const pad = ' '.repeat(indent);
    const extra = fc.constantFrom<string[]>([], [], [], [], [''], [`${pad}# a comment`], ['   ']);
    const child = (d: number) => fc.constantFrom(1, 2, 4).chain((step) => block(d, indent + step));
    const onItsLine = inline(2).map((v) => ({ v, nested: [] as string[] }));
    const value =
      depth === 0
        ? onItsLine
        : fc.oneof(
            { weight: 3, arbitrary: onItsLine },
            { weight: 1, arbitrary: child(depth - 1).map((nested) => ({ v: '', nested })) },
            // A sequence at the key's own indentation.
            { weight: 1, arbitrary: sequence(depth - 1, indent).map((nested) => ({ v: '', nested })) },
          );
    const mapping = fc
      .uniqueArray(fc.tuple(key, separator, value, comment, extra), { minLength: 1, maxLength: 3, selector: ([k]) => k })
      .map((entries) => entries.flatMap(([k, c, { v, nested }, com, ex]) => [`${pad}${k}${v === '' ? ':' : c + v}${com}`, ...nested, ...ex]));
    return depth === 0 ? mapping : fc.oneof(mapping, sequence(depth, indent));
  };

  const sequence = (depth: number, indent: number): fc.Arbitrary<string[]> => {
    const pad = ' '.repeat(indent);
    const item =
      depth === 0
        ? inline(1).map((v) => [`- ${v}`])
        : fc.oneof(
            { weight: 3, arbitrary: fc.tuple(fc.constantFrom('- ', '-  '), inline(2)).map(([d, v]) => [`${d}${v}`]) },
            // A mapping begun on the item's line: its keys two columns in.
            {
              weight: 2,
              arbitrary: block(depth - 1, indent + 2)
                .filter((b) => !b[0].trimStart().startsWith('-'))
                .map((b) => [`- ${b[0].slice(indent + 2)}`, ...b.slice(1)]),
            },
            {
              weight: 1,
              arbitrary: fc
                .constantFrom(2, 4)
                .chain((step) => block(depth - 1, indent + step))
                .map((b) => ['-', ...b]),
            },
          );
    return fc.array(item, { minLength: 1, maxLength: 3 }).map((items) => items.flatMap(([first, ...rest]) => [`${pad}${first}`, ...rest]));
  };

  return fc.tuple(block(3, 0), fc.constantFrom('', '\n', '\n# end\n')).map(([lines, end]) => lines.join('\n') + end);
}

describe('readPlainYaml', () => {
  it('reads the rete-shaped texts the yaml package reads, and reads them as it does', () => {
    let read = 0;
    Object.assign(placeCounts, { given: 0, left: 0 });
    fc.assert(
      fc.property(yamlTexts(false), (text) => {
        expect(byPackage(text)).not.toHaveProperty('error');
        if (agrees(text) === 'read') read++;
      }),
      { numRuns: 3000, seed: 20261205 },
    );
    // The texts are the reader's own kind: it must read nearly all of them, not decline its way to a pass.
    expect(read).toBeGreaterThan(2700);
    // And placed every value in them: none is a null written as nothing.
    expect(placeCounts).toEqual({ given: expect.any(Number), left: 0 });
    expect(placeCounts.given).toBeGreaterThan(20000);
  });

  it('reads texts with odd scalars, keys and comments as the yaml package does, or declines them', () => {
    fc.assert(
      fc.property(yamlTexts(true), (text) => {
        agrees(text);
      }),
      { numRuns: 5000, seed: 5122026 },
    );
  });

  it('reads what the yaml package reads, or declines: one line of anything', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'ab -:#[]{},\'"\\!&*|>?%@`~0.1\n e\u00a0\t'.split('')), maxLength: 16 }), (value) => {
        agrees(`k: ${value}`);
        agrees(`- ${value}`);
        agrees(value);
      }),
      { numRuns: 20000, seed: 7 },
    );
  });

  it('reads the generated fleet and every rete in the repository as the package does', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
        if (statSync(path).isDirectory()) walk(path);
        else if (/\.ya?ml$/.test(name)) files.push(path);
      }
    };
    for (const dir of ['examples', 'test', 'docs', 'bench', 'deploy']) {
      try {
        walk(dir);
      } catch {
        // not in this checkout
      }
    }
    const fleet = fleetRete(3000);
    const texts = [...files.map((f) => readFileSync(f, 'utf8')), ...[...fleet.values()]];
    let read = 0;
    for (const text of texts) if (agrees(text) === 'read') read++;
    // The generated fleet's files are all read by the reader itself.
    for (const text of [...fleet.values()]) expect(readPlainYaml(text)).toBeDefined();
    expect(read).toBeGreaterThanOrEqual(fleet.size);
  });

  it('reads what the package writes of plain data', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), (value) => {
        agrees(stringify(value));
        agrees(stringify({ k: value }, { collectionStyle: 'flow' }));
      }),
      { numRuns: 3000, seed: 11 },
    );
  });

  it('declines what it does not read, so that the package says what and where', () => {
    for (const text of [
      'a: 1\na: 2\n',
      'a: &x 1\nb: *x\n',
      'a: !!str 1\n',
      'a: |\n  text\n',
      'a: >\n  text\n',
      'a: b\n  c\n',
      'a: "multi\n  line"\n',
      'a: [1,\n  2]\n',
      '? a\n: b\n',
      '"a": 1\n',
      '--- \na: 1\n',
      'a: 1\n---\nb: 2\n',
      'a:\tb\n',
      'a: 1\r\n',
      '\ufeffa: 1\n',
      'a: 0x1F\n',
      'a: 1e3\n',
      'a: 0644\n',
      'a: 1.5\n',
      '  a: 1\n',
      'a: b: c\n',
      '- - a\n',
      'a:\n  - b\n c: 1\n',
    ]) {
      expect([text, readPlainYaml(text)]).toEqual([text, undefined]);
    }
  });

  it('declines a block key longer than the 1,024 characters the package allows, and reads one that long', () => {
    for (const text of [`${'a'.repeat(1025)}: 1`, `${'a'.repeat(1025)}:`, `x:\n  ${'a'.repeat(1025)}: 1`, `- ${'a'.repeat(1025)}: 1`]) {
      expect(byPackage(text)).toHaveProperty('error');
      expect(readPlainYaml(text)).toBeUndefined();
    }
    expect(agrees(`${'a'.repeat(1024)}: 1`)).toBe('read');
    expect(agrees(`- ${'a'.repeat(1024)}: 1`)).toBe('read');
  });

  it('declines nesting deeper than it reads, where the package may run out of stack, and never runs out of its own', () => {
    const deep = (n: number) => [
      `a: ${'['.repeat(n)}${']'.repeat(n)}`,
      `a: ${'{a: '.repeat(n)}1${' }'.repeat(n)}`,
      Array.from({ length: n }, (_, i) => `${' '.repeat(i)}a:`).join('\n'),
      Array.from({ length: n }, (_, i) => `${' '.repeat(i)}-`).join('\n'),
    ];
    // At 6,000 the reader without a bound ran out of stack (the block texts hold n²/2 spaces: no deeper).
    for (const text of [...deep(65), ...deep(800), ...deep(6000)]) expect(readPlainYaml(text)).toBeUndefined();
    for (const text of deep(60)) expect(agrees(text)).toBe('read');
  });

  it('reads a site file of the shape retectl compiles at fleet size', () => {
    const text = [
      'nodes:',
      '  - name: node-049004',
      '    kind: server',
      '    listen: 10.0.191.107:7946   # moved',
      '    tags: [web, site-50, site-50-web]',
      '    services:',
      '      - { name: metrics, port: 9100 }',
      'acl:',
      '  - from: [tag:site-50-monitor]',
      '    to: [node-049001:metrics, node-049002:metrics]',
      'resources:',
      '- select: { tags: [web] }',
      '  files:',
      '    - { path: /etc/motd, content: "managed by Florete\\n", mode: "0644" }',
      '',
    ].join('\n');
    expect(readPlainYaml(text)).toEqual({
      value: {
        nodes: [
          {
            name: 'node-049004',
            kind: 'server',
            listen: '10.0.191.107:7946',
            tags: ['web', 'site-50', 'site-50-web'],
            services: [{ name: 'metrics', port: 9100 }],
          },
        ],
        acl: [{ from: ['tag:site-50-monitor'], to: ['node-049001:metrics', 'node-049002:metrics'] }],
        resources: [{ select: { tags: ['web'] }, files: [{ path: '/etc/motd', content: 'managed by Florete\n', mode: '0644' }] }],
      },
    });
    expect(agrees(text)).toBe('read');
  });
});
