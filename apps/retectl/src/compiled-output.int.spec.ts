import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bucketOf } from '#bundle';
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '#bundle';
import { forgetRecord, MAX_PACKS, packsHold, readCompiled, readRecord, RecordedNodes, writeCompiled } from './compiled-output.js';
import { editPacked, packedText } from './testing/packed-tree.js';
import { RetectlError } from './errors.js';

const NODE_LINES = join('.flor', 'compiled', 'index');
const GENERATION = '0123456789abcdef';
const name = (i: number): string => `node-${String(i).padStart(5, '0')}`;

describe('the node lines of a record read from its file', () => {
  let root: string;
  const count = 1500;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'florete-record-'));
    const nodes = Array.from({ length: count }, (_, i) => [name(i), new Map([['flor.json', `{"node":"${name(i)}"}\n`]])] as const);
    writeCompiled(root, nodes);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** Entries shaped as a compile writes them (the set digest and head bucket where they are split), longer, shorter and the same length. */
  const entry = (node: string, stamp: string): string => `fp-${node} ${stamp} set-${stamp} ${bucketOf(node)}`;

  it('takes new entries over the bytes it read and writes what splicing the text writes, with the bucket index moved to match', () => {
    const all = readRecord(root)!.nodes.toMap();
    expect(all.size).toBe(count);
    // Two nodes of one bucket, the first and last lines, and entries that grow, shrink and keep their length.
    const inBucket = [...all.keys()].filter((n) => bucketOf(n) === bucketOf(name(700)));
    const first = new Map([
      [name(0), entry(name(0), '1.5/2.5')],
      [inBucket[0], entry(inBucket[0], '1701234567890.1235/1701234567890.123')],
      [inBucket[1], entry(inBucket[1], '-/-')],
    ]);
    const then = new Map([
      [name(count - 1), entry(name(count - 1), `${'9'.repeat(40)}/1`)],
      [name(0), entry(name(0), '2/2')],
    ]);
    const read = readRecord(root)!.nodes.whole();
    // The record's files are gone before a recompile writes: what it carries over was read before.
    forgetRecord(root);
    const layered = read.with(first).with(then);
    const spliced = RecordedNodes.of(new Map([...all, ...first, ...then]));

    const written = layered.written(GENERATION);
    const expected = spliced.written(GENERATION);
    expect(Buffer.concat(written.pieces)).toEqual(Buffer.concat(expected.pieces));
    expect(written.index).toBeDefined();
    expect(written.index).toEqual(expected.index);
    // The bytes it holds are left as they were read: the new entries only in what it writes.
    expect(read.get(name(0))).toBe(all.get(name(0)));

    for (const node of [...first.keys(), ...then.keys(), name(1), name(700)]) expect(layered.get(node)).toBe(spliced.get(node));
    expect(layered.get('node-x')).toBeUndefined();
    const known = spliced.heads().buckets.map(() => 'known');
    const only = new Set([...first.keys(), ...then.keys()].map(bucketOf));
    expect(layered.bucketDigests(known, only)).toEqual(spliced.bucketDigests(known, only));
    // Every bucket, worked out from the bytes read (with the layers' entries put in) as from the lines split one by one.
    const every = new Set(known.map((_, b) => b));
    expect(layered.bucketDigests(known, every)).toEqual(spliced.heads().buckets);
    expect(read.bucketDigests(known, every)).toEqual(RecordedNodes.of(all).heads().buckets);
    expect(layered.toMap()).toEqual(spliced.toMap());
    expect(layered.names(new Set([name(3)]))).toEqual(spliced.names(new Set([name(3)])));
    expect(Buffer.from(layered.bytes())).toEqual(Buffer.concat(expected.pieces).subarray(GENERATION.length));
    expect(() => layered.with(new Map([['node-x', 'x']]))).toThrow('compile record: node-x is not recorded');
  });

  it('reads the lines as the file holds them, and takes a file cut short since as another compile', () => {
    writeCompiled(
      root,
      Array.from({ length: 20 }, (_, i) => [name(i), new Map([['flor.json', `{"n":${i}}\n`]])] as const),
    );
    const bytes = readRecord(root)!.nodes.bytes();
    const file = readFileSync(join(root, NODE_LINES));
    expect(Buffer.from(bytes)).toEqual(file.subarray(GENERATION.length));

    const record = readRecord(root)!;
    writeFileSync(join(root, NODE_LINES), file.subarray(0, file.length - 1));
    expect(() => record.nodes.bytes()).toThrow(RetectlError);
    expect(() => record.nodes.bytes()).toThrow('changed while it was read, by another compile');
    // Its generation and nothing after it.
    writeFileSync(join(root, NODE_LINES), file.subarray(0, GENERATION.length));
    expect(() => readRecord(root)!.nodes.bytes()).toThrow('changed while it was read, by another compile');
  });
});

describe('writeCompiled told that every pack held its stamp', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'florete-packs-held-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const nodes = () => Array.from({ length: 3 }, (_, i) => [name(i), new Map([['flor.json', `{"n":${i}}\n`]])] as const);
  const spoil = () => editPacked(root, name(1), 'flor.json', (bytes) => Buffer.alloc(bytes.length, 0x20));
  const flor = () => packedText(root, name(1), 'flor.json');

  it("takes that word only for the record of the generation it names, and otherwise reads each node's entry back", () => {
    writeCompiled(root, nodes());
    spoil();
    // Said of another record (one that another compile has replaced since): each entry is read, the spoilt one written again.
    writeCompiled(root, nodes(), undefined, undefined, undefined, 'ffffffffffffffff');
    expect(flor()).toBe('{"n":1}\n');

    // Said of this record, as packsHold found it: the entries are not read, so a byte changed after that check is not seen.
    const generation = readRecord(root)!.generation!;
    spoil();
    writeCompiled(root, nodes(), undefined, undefined, undefined, generation);
    expect(flor()).toBe(' '.repeat(8));
    // The record still holds the stamp that pack had before: the next compile finds it moved, and writes the entry again.
    expect(packsHold(root, readRecord(root)!)).toBe(false);
    writeCompiled(root, nodes());
    expect(flor()).toBe('{"n":1}\n');
  });
});

describe('writeCompiled folding packs', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'florete-fold-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const packs = () => readdirSync(join(root, '.flor', 'compiled')).filter((f) => f.startsWith('pack-'));
  /** Twelve nodes, those up to `round` edited once: each round changes one node more. */
  const tree = (round: number) =>
    new Map(Array.from({ length: 12 }, (_, i) => [name(i), new Map([['flor.json', `{"n":${i},"edited":${i <= round}}\n`]])] as const));
  const asRead = (nodes: Map<string, Map<string, string>>) => new Map([...nodes].map(([n, set]) => [n, new Map(set)]));

  it('folds every pack but the largest into the new one when they would number more than MAX_PACKS, the tree read back the same', () => {
    writeCompiled(root, tree(0));
    const [first] = packs();
    const counts: number[] = [];
    for (let round = 1; round <= MAX_PACKS + 2; round++) {
      const nodes = tree(round);
      writeCompiled(root, nodes);
      counts.push(packs().length);
      expect(readCompiled(root)).toEqual(asRead(nodes));
      expect(packsHold(root, readRecord(root)!)).toBe(true);
    }
    // One more pack a change, up to MAX_PACKS; then the small ones folded into the new one, beside the first.
    expect(counts).toEqual([2, 3, 4, 5, 6, 7, 8, 2, 3, 4]);
    expect(packs()).toContain(first);
  });

  it('folds a pack when more than a tenth of it, and at least 4 MB, is entries no node reads, and removes one no node reads at all', () => {
    const big = randomBytes(5 << 20);
    const nodes = tree(0) as Map<string, Map<string, string | Buffer>>;
    writeCompiled(root, new Map([...nodes, ['large', new Map([[`file-${sha256Hex(big)}`, big]])]]));
    const [first] = packs();
    writeCompiled(root, nodes);
    // The 5 MB entry gone, every live entry of that pack copied into a new one, and the pack removed.
    expect(packs()).toHaveLength(1);
    expect(packs()).not.toContain(first);
    expect(statSync(join(root, '.flor', 'compiled', packs()[0])).size).toBeLessThan(10_000);
    expect(readCompiled(root)).toEqual(asRead(nodes as Map<string, Map<string, string>>));
    // Every node changed: the old pack, read by no node, goes.
    const [second] = packs();
    const changed = tree(0);
    for (const set of changed.values()) set.set('agent.json', '{}\n');
    writeCompiled(root, changed);
    expect(packs()).toHaveLength(1);
    expect(packs()).not.toContain(second);
  });
});
