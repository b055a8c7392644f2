import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { digestsJson, type ArtifactBytes } from '#rete';
import { sha256Hex } from '#bundle';
import { entryArtifacts, PackReader, PackWriter, packName, packStamp, packStamps, parseLocation, removeUnnamed, type PackedEntry } from './compiled-pack.js';

/** A node's compiled set as the compile makes one: JSON artifacts as text, a file content as bytes named by its sha256. */
function setOf(node: string, fileBytes?: Buffer): Map<string, ArtifactBytes> {
  const set = new Map<string, ArtifactBytes>([
    ['flor.json', `{\n  "node": "${node}"\n}\n`],
    ['agent.json', `{\n  "poll": 30\n}\n`],
  ]);
  if (fileBytes) set.set(`file-${sha256Hex(fileBytes)}`, fileBytes);
  return set;
}

const entryOf = (got: PackedEntry | { problem: string }): PackedEntry => {
  if ('problem' in got) throw new Error(got.problem);
  return got;
};

describe('compiled packs', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'florete-pack-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Writes the sets into one pack; each node's location and set digest. */
  function pack(sets: ReadonlyMap<string, ReadonlyMap<string, ArtifactBytes>>): { id: string; at: Map<string, { location: string; set: string }> } {
    const writer = new PackWriter(dir);
    const at = new Map<string, { location: string; set: string }>();
    for (const [node, set] of sets) {
      const { location, digests } = writer.add(node, set);
      at.set(node, { location, set: digests.set_digest });
    }
    expect(writer.finish()).toBe(true);
    return { id: writer.id, at };
  }

  it('reads back each node as written, its digest list the one digests.json would hold, across slices and entries larger than one', () => {
    const big = randomBytes(5 << 20);
    const sets = new Map<string, Map<string, ArtifactBytes>>();
    for (let i = 0; i < 3000; i++) sets.set(`node-${i}`, setOf(`node-${i}`, i === 1500 ? big : i % 7 === 0 ? randomBytes(3000) : undefined));
    const { id, at } = pack(sets);
    expect(readdirSync(dir)).toEqual([packName(id)]);
    const reader = new PackReader(dir);
    try {
      for (const [node, set] of sets) {
        const { location, set: digest } = at.get(node)!;
        const entry = entryOf(reader.read(node, location, digest));
        expect(entry.text).toBe(digestsJson(node, set).text);
        const read = entryArtifacts(entry.artifacts);
        expect([...read.keys()].sort()).toEqual([...set.keys()].sort());
        // Text as text, bytes as bytes (compared whole: element by element, a 5 MB buffer takes jest seconds).
        for (const [name, content] of set) {
          const got = read.get(name)!;
          if (typeof content === 'string') expect(got).toBe(content);
          else expect(Buffer.isBuffer(got) && got.equals(content)).toBe(true);
        }
      }
    } finally {
      reader.close();
    }
    expect(parseLocation(at.get('node-1500')!.location)!.length).toBeGreaterThan(5 << 20);
  });

  it('writes nothing for a pack given no entry, and a dropped pack leaves no file', () => {
    expect(new PackWriter(dir).finish()).toBe(false);
    const dropped = new PackWriter(dir);
    dropped.add('alpha', setOf('alpha', randomBytes(5 << 20)));
    expect(readdirSync(dir)).toHaveLength(1);
    dropped.abort();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses an entry whose bytes changed in the pack, naming the artifact, and one whose digest list changed', () => {
    const { id, at } = pack(
      new Map([
        ['alpha', setOf('alpha', Buffer.from('secret\n'))],
        ['beta', setOf('beta')],
      ]),
    );
    const path = join(dir, packName(id));
    const bytes = readFileSync(path);
    const beta = parseLocation(at.get('beta')!.location)!;
    // A byte of beta's flor.json (the artifacts follow the list in name order: agent.json, then flor.json).
    const flipped = Buffer.from(bytes);
    flipped[beta.offset + beta.length - 3] ^= 0x20;
    writeFileSync(path, flipped);
    const reader = new PackReader(dir);
    expect(reader.read('beta', at.get('beta')!.location, at.get('beta')!.set)).toEqual({ problem: "was changed: beta's flor.json is not the one compiled" });
    // alpha, before it in the pack, is as written.
    expect('problem' in reader.read('alpha', at.get('alpha')!.location, at.get('alpha')!.set)).toBe(false);
    reader.close();

    const listed = Buffer.from(bytes);
    listed[beta.offset + listed.subarray(beta.offset).indexOf('"beta"') + 1] = 'z'.charCodeAt(0);
    writeFileSync(path, listed);
    const again = new PackReader(dir);
    expect(again.read('beta', at.get('beta')!.location, at.get('beta')!.set)).toEqual({
      problem: 'was changed: the digest list of beta is not the one compiled',
    });
    again.close();
  });

  it("gives a refused entry's files as its digest list still names them, and nothing when the list is not one", () => {
    const { id, at } = pack(new Map([['beta', setOf('beta')]]));
    const path = join(dir, packName(id));
    const bytes = readFileSync(path);
    const beta = parseLocation(at.get('beta')!.location)!;
    const damaged = Buffer.from(bytes);
    damaged[beta.offset + beta.length - 3] ^= 0x20;
    writeFileSync(path, damaged);
    const reader = new PackReader(dir);
    expect('problem' in reader.read('beta', at.get('beta')!.location, at.get('beta')!.set)).toBe(true);
    const slices = reader.slices(at.get('beta')!.location)!;
    expect([...slices.keys()]).toEqual(['agent.json', 'flor.json']);
    expect(slices.get('agent.json')!.toString()).toBe(setOf('beta').get('agent.json'));
    expect(slices.get('flor.json')!.equals(Buffer.from(setOf('beta').get('flor.json') as string))).toBe(false);
    reader.close();
    const garbled = Buffer.from(bytes);
    garbled[beta.offset] = 0x20;
    garbled[beta.offset + 1] = 0x5b;
    writeFileSync(path, garbled);
    const again = new PackReader(dir);
    expect(again.slices(at.get('beta')!.location)).toBeUndefined();
    expect(again.slices('not a location')).toBeUndefined();
    again.close();
  });

  it("refuses an entry read as another node's, under a set digest other than the compile's, or past the pack's end", () => {
    const { id, at } = pack(
      new Map([
        ['alpha', setOf('alpha')],
        ['beta', setOf('beta')],
      ]),
    );
    const reader = new PackReader(dir);
    const alpha = at.get('alpha')!;
    expect(reader.read('beta', alpha.location, alpha.set)).toEqual({ problem: 'was changed: the digest list of beta is not the one compiled' });
    expect(reader.read('alpha', alpha.location, at.get('beta')!.set)).toEqual({ problem: 'was changed: the digest list of alpha is not the one compiled' });
    reader.close();
    truncateSync(join(dir, packName(id)), parseLocation(at.get('beta')!.location)!.offset + 10);
    const cut = new PackReader(dir);
    expect(cut.read('beta', at.get('beta')!.location, at.get('beta')!.set)).toEqual({ problem: 'was cut short: the entry of beta ends past its end' });
    expect('problem' in cut.read('alpha', alpha.location, alpha.set)).toBe(false);
    cut.close();
  });

  it('refuses an entry holding more than its list names, a pack removed, and a location it did not make', () => {
    const { id, at } = pack(new Map([['alpha', setOf('alpha')]]));
    const a = parseLocation(at.get('alpha')!.location)!;
    writeFileSync(join(dir, packName(id)), Buffer.concat([readFileSync(join(dir, packName(id))), Buffer.from('x')]));
    const longer = new PackReader(dir);
    expect(longer.read('alpha', `${id}:${a.offset}:${a.digestsLength}:${a.length + 1}`, at.get('alpha')!.set)).toEqual({
      problem: 'was changed: the entry of alpha holds more than its digest list names',
    });
    longer.close();
    for (const bad of ['', `${id}:0:10`, `${id}:0:20:10`, `xyz:0:1:2`, `${id}:-1:1:2`, `${id}:0:1:2:3`]) {
      expect(parseLocation(bad)).toBeUndefined();
      expect(new PackReader(dir).read('alpha', bad, at.get('alpha')!.set)).toEqual({
        problem: `has no entry of alpha where the compile's index says (${bad})`,
      });
    }
    rmSync(join(dir, packName(id)));
    expect(new PackReader(dir).read('alpha', at.get('alpha')!.location, at.get('alpha')!.set)).toEqual({ problem: 'was removed' });
  });

  it('stamps each pack by size and mtime, and removes the packs not kept and the temporary files of stopped writes', () => {
    const first = pack(new Map([['alpha', setOf('alpha')]])).id;
    const second = pack(new Map([['beta', setOf('beta')]])).id;
    const third = pack(new Map([['gamma', setOf('gamma')]])).id;
    const stopped = `.${packName('0123456789abcdef')}.tmp-999999999-0123abcd`;
    writeFileSync(join(dir, stopped), 'half a pack');
    writeFileSync(join(dir, 'index'), 'not a pack');
    expect([...packStamps(dir).keys()].sort()).toEqual([first, second, third].sort());
    const before = packStamp(dir, second)!;
    writeFileSync(join(dir, packName(second)), Buffer.concat([readFileSync(join(dir, packName(second))), Buffer.from('\n')]));
    expect(packStamp(dir, second)).not.toBe(before);
    expect(packStamp(dir, '0123456789abcdef')).toBeUndefined();

    expect(removeUnnamed(dir, new Set([second]))).toBe(2);
    expect(readdirSync(dir).sort()).toEqual(['index', packName(second)]);
    expect(existsSync(join(dir, stopped))).toBe(false);
  });
});
