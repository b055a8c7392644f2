import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bucketOf } from '#bundle';
import { forgetRecord, readRecord, RecordedNodes, writeCompiled } from './compiled-output.js';
import { RetectlError } from './errors.js';

const NODE_LINES = join('.flor', 'cache', 'compiled.nodes');
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
    expect(layered.toMap()).toEqual(spliced.toMap());
    expect(layered.names(new Set([name(3)]))).toEqual(spliced.names(new Set([name(3)])));
    expect(Buffer.from(layered.bytes())).toEqual(Buffer.concat(expected.pieces).subarray(GENERATION.length));
    expect(() => layered.with(new Map([['node-x', 'x']]))).toThrow('compile record: node-x is not recorded');
  });

  it('reads the lines into memory a worker shares, and takes a file cut short since as another compile', () => {
    writeCompiled(
      root,
      Array.from({ length: 20 }, (_, i) => [name(i), new Map([['flor.json', `{"n":${i}}\n`]])] as const),
    );
    const bytes = readRecord(root)!.nodes.bytes();
    expect(bytes.buffer).toBeInstanceOf(SharedArrayBuffer);
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

describe('writeCompiled told that every node folder held its stamp', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'florete-stamps-held-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const nodes = () => Array.from({ length: 3 }, (_, i) => [name(i), new Map([['flor.json', `{"n":${i}}\n`]])] as const);
  const digests = () => join(root, '.flor', 'compiled', name(1), 'digests.json');

  it("takes that word only for the record of the generation it names, and otherwise stats each node's folder", () => {
    writeCompiled(root, nodes());
    rmSync(digests());
    // Said of another record (one that another compile has replaced since): each folder is statted, the file put back.
    writeCompiled(root, nodes(), undefined, undefined, undefined, 'ffffffffffffffff');
    expect(existsSync(digests())).toBe(true);

    // Said of this record, as checkStamps found it: the folders are not statted again, so a file deleted after that check is not seen.
    const generation = readRecord(root)!.generation!;
    rmSync(digests());
    writeCompiled(root, nodes(), undefined, undefined, undefined, generation);
    expect(existsSync(digests())).toBe(false);
    // The record still holds the stamp that folder had before: the next compile finds it moved, and puts the file back.
    writeCompiled(root, nodes());
    expect(existsSync(digests())).toBe(true);
  });
});
