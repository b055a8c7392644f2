import { bytesOf, diffTrees, sameBytes } from './tree-diff.js';

describe('tree diff', () => {
  it('compares artifacts by bytes, whether read as text or as raw bytes', () => {
    expect(sameBytes('héllo\n', Buffer.from('héllo\n', 'utf8'))).toBe(true);
    expect(sameBytes(Uint8Array.from([0xff, 0x00]), Buffer.from([0xff, 0x00]))).toBe(true);
    expect(sameBytes(Uint8Array.from([0xff]), Uint8Array.from([0xfe]))).toBe(false);
    expect(sameBytes(undefined, '')).toBe(false);
    // A view into a larger buffer is only its own bytes.
    expect([...bytesOf(Uint8Array.from([1, 2, 3, 4]).subarray(1, 3))]).toEqual([2, 3]);
  });

  it('lists a node changed only by the artifacts whose bytes differ', () => {
    const key = Uint8Array.from([0x99, 0x01, 0xff]);
    const before = new Map([
      [
        'alpha',
        new Map<string, string | Uint8Array>([
          ['flor.json', '{}\n'],
          ['file-k', Buffer.from(key)],
        ]),
      ],
    ]);
    const same = new Map([
      [
        'alpha',
        new Map<string, string | Uint8Array>([
          ['flor.json', Buffer.from('{}\n')],
          ['file-k', key],
        ]),
      ],
    ]);
    expect(diffTrees(before, same)).toEqual({ added: [], changed: [], removed: [], unchanged: ['alpha'] });
    const other = new Map([
      [
        'alpha',
        new Map<string, string | Uint8Array>([
          ['flor.json', '{}\n'],
          ['file-k', Uint8Array.from([0x99])],
        ]),
      ],
    ]);
    expect(diffTrees(before, other).changed).toEqual([{ node: 'alpha', artifacts: ['file-k'] }]);
  });
});
