import { canonicalPretty, setDigest, sha256Hex } from '#bundle';
import { CompiledSetDigests } from '#contracts';
import { compileRete } from './compile.js';
import { EXAMPLE_RETE } from './example.js';
import { compiledSetDigests, digestsJsonText } from './set-digests.js';
import { validateRete } from './validate.js';

const tree = () => {
  const { rete } = validateRete(Object.entries(EXAMPLE_RETE).map(([file, text]) => ({ file, text })));
  return compileRete(rete!);
};

describe('a compiled node digest list', () => {
  it('lists every artifact of the node, sorted by name, with the bytes sha256 and size as written', () => {
    const files = new Map<string, string | Uint8Array>([
      ['flor.json', '{"é": 1}\n'],
      ['agent.json', '{}\n'],
      ['file-00', Uint8Array.from([0, 255, 1])],
    ]);
    const d = compiledSetDigests('alpha', files);
    expect(d.artifacts).toEqual([
      { name: 'agent.json', sha256: sha256Hex('{}\n'), size: 3 },
      { name: 'file-00', sha256: sha256Hex(Uint8Array.from([0, 255, 1])), size: 3 },
      // Text is UTF-8: é is two bytes.
      { name: 'flor.json', sha256: sha256Hex(Buffer.from('{"é": 1}\n', 'utf8')), size: 10 },
    ]);
    expect(d.node).toBe('alpha');
  });

  it('carries the set digest the coordinator gives the same set', () => {
    for (const [node, files] of tree()) {
      const d = compiledSetDigests(node, files);
      expect(d.set_digest).toBe(setDigest([...files].map(([name, bytes]) => ({ name, sha256: sha256Hex(bytes) }))));
      expect(CompiledSetDigests.parse(d)).toEqual(d);
    }
  });

  it('is canonical JSON, the same bytes for the same files in any order', () => {
    const [node, files] = [...tree()][0];
    const reversed = new Map([...files].reverse());
    expect(digestsJsonText(node, reversed)).toBe(digestsJsonText(node, files));
    expect(digestsJsonText(node, files)).toBe(canonicalPretty(JSON.parse(digestsJsonText(node, files))));
  });

  it('refuses a list that is not sorted or names an artifact twice', () => {
    const a = { name: 'a.json', sha256: sha256Hex('a'), size: 1 };
    const b = { name: 'b.json', sha256: sha256Hex('b'), size: 1 };
    const issues = (artifacts: unknown[]) =>
      CompiledSetDigests.safeParse({ node: 'alpha', set_digest: sha256Hex(''), artifacts }).error?.issues.map((i) => i.message);
    expect(issues([a, b])).toBeUndefined();
    expect(issues([b, a])).toEqual(['a.json is out of order: the list is sorted by name']);
    expect(issues([a, a])).toEqual(['a.json is listed twice']);
  });
});
