import { randomBytes } from 'node:crypto';
import { deflateSync, inflateSync } from 'node:zlib';
import { deflateObject, packBlobs, packObjects, storedZlib, unpackBlobs, unpackObjects, type LooseObject } from './loose-objects.js';

describe('the zlib streams git objects are stored in', () => {
  const samples = [
    Buffer.alloc(0),
    Buffer.from('1\n'),
    Buffer.from('{"acl":[]}\n'),
    randomBytes(1024),
    Buffer.alloc(1024, 0xff),
    randomBytes(5000),
    Buffer.alloc(70 * 1024, 'a'),
  ];

  it('stores small objects in a stream zlib inflates back, with the checksum zlib computes', () => {
    for (const bytes of samples.filter((b) => b.length <= 65535)) {
      const stored = storedZlib(bytes);
      expect(stored.length).toBe(bytes.length + 11);
      expect(inflateSync(stored).equals(bytes)).toBe(true);
      // The Adler-32 trailer is the one zlib itself writes for the same bytes.
      expect(stored.subarray(-4).equals(deflateSync(bytes).subarray(-4))).toBe(true);
    }
  });

  it('stores objects of up to 1 KiB and deflates larger ones, every one inflating to its bytes', () => {
    for (const bytes of samples) {
      const out = deflateObject(bytes);
      expect(inflateSync(out).equals(bytes)).toBe(true);
      if (bytes.length <= 1024) expect(out.equals(storedZlib(bytes))).toBe(true);
    }
    // Repetitive bytes over the limit are compressed (a tree over 64 KiB with Huffman coding only).
    expect(deflateObject(Buffer.alloc(5000, 'a')).length).toBeLessThan(100);
    expect(deflateObject(Buffer.alloc(70 * 1024, 'a')).length).toBeLessThan(20 * 1024);
  });
});

describe('objects and bodies packed for the writer thread', () => {
  it('unpacks every object with its type, id and bytes, empty ones included, from one buffer', () => {
    const objects: LooseObject[] = [
      { type: 'blob', oid: 'a'.repeat(40), content: Buffer.from('first\n') },
      { type: 'tree', oid: 'b'.repeat(40), content: Buffer.alloc(0) },
      { type: 'commit', oid: 'c'.repeat(40), content: randomBytes(3000) },
    ];
    const packed = packObjects(objects);
    expect(packed.bytes.byteLength).toBe(3006);
    const back = unpackObjects(structuredClone(packed, { transfer: [packed.bytes] }));
    expect(back.map((o) => [o.type, o.oid, Buffer.from(o.content).toString('hex')])).toEqual(
      objects.map((o) => [o.type, o.oid, Buffer.from(o.content).toString('hex')]),
    );
  });

  it('unpacks bodies under their sha256 and refuses a key that is not one', () => {
    const blobs = new Map([
      ['1'.repeat(64), Buffer.from('{"acl":[]}\n')],
      ['2'.repeat(64), Buffer.from('x')],
    ]);
    const back = unpackBlobs(packBlobs(blobs));
    expect([...back].map(([k, v]) => [k, Buffer.from(v).toString()])).toEqual([...blobs].map(([k, v]) => [k, v.toString()]));
    expect(() => packBlobs(new Map([['abc', Buffer.from('x')]]))).toThrow('a mirror blob is keyed "abc", not by 64 characters');
    expect(() => packObjects([{ type: 'blob', oid: 'short', content: Buffer.alloc(0) }])).toThrow('a git object is keyed "bshort"');
  });
});
