import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeLooseObjectsSync, type LooseObject } from './loose-objects.js';
import { packedObjects } from './pack-index.js';
import { PACK_FROM, writeObjectsSync } from './packfile.js';

const blob = (text: string): LooseObject => {
  const content = Buffer.from(text);
  return { type: 'blob', oid: createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex'), content };
};

function looseOids(gitdir: string): string[] {
  const out: string[] = [];
  for (const d of readdirSync(join(gitdir, 'objects')))
    if (/^[0-9a-f]{2}$/.test(d)) for (const f of readdirSync(join(gitdir, 'objects', d))) out.push(`${d}${f}`);
  return out.sort();
}

/** The mirror's loose writes against the objects its packs already hold, in a real repository read back by git. */
describe('objects already in a pack', () => {
  const dir = mkdtempSync(join(tmpdir(), 'florete-pack-index-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('are found by their pack index, and not written again as loose objects', () => {
    const gitdir = join(dir, 'repo.git');
    execFileSync('git', ['init', '-q', '--bare', gitdir]);
    expect(packedObjects(gitdir)(blob('anything\n').oid)).toBe(false);

    // Two packs, as two large commits write them; enough objects that every first byte has some,
    // so the fan-out table's first and last buckets are searched too.
    const first = Array.from({ length: PACK_FROM * 3 }, (_, i) => blob(`first ${i}\n`));
    const second = Array.from({ length: PACK_FROM }, (_, i) => blob(`second ${i}\n`));
    writeObjectsSync(gitdir, first);
    writeObjectsSync(gitdir, second);
    expect(looseOids(gitdir)).toEqual([]);
    const packed = execFileSync('git', ['--git-dir', gitdir, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname)'], { encoding: 'utf8' })
      .trim()
      .split('\n');
    expect(packed).toHaveLength(first.length + second.length);
    expect(packed.some((o) => o.startsWith('00'))).toBe(true);
    expect(packed.some((o) => o.startsWith('ff'))).toBe(true);

    const inPack = packedObjects(gitdir);
    for (const o of [...first, ...second]) expect(inPack(o.oid)).toBe(true);
    // Names a byte either side of a packed one, and at either end of the range, are not there.
    const near = (oid: string, delta: number) => (BigInt(`0x${oid}`) + BigInt(delta)).toString(16).padStart(40, '0');
    for (const o of packed.slice(0, 50)) for (const d of [-1, 1]) if (!packed.includes(near(o, d))) expect(inPack(near(o, d))).toBe(false);
    expect(inPack('0'.repeat(40))).toBe(false);
    expect(inPack('f'.repeat(40))).toBe(false);

    // A small commit naming a packed blob beside new objects writes only the new ones, loose.
    const fresh = [blob('new one\n'), blob('new two\n')];
    writeLooseObjectsSync(gitdir, [first[0], fresh[0], second[7], fresh[1], first[first.length - 1]]);
    expect(looseOids(gitdir)).toEqual(fresh.map((o) => o.oid).sort());
    expect(execFileSync('git', ['--git-dir', gitdir, 'cat-file', '-p', first[0].oid], { encoding: 'utf8' })).toBe('first 0\n');
    execFileSync('git', ['--git-dir', gitdir, 'fsck', '--strict'], { stdio: 'ignore' });
  });
});
