import { createHash } from 'node:crypto';
import { testDatabases } from '../../../../test/support/databases.js';
import type { Db } from '../db/index.js';
import { blobSizes, missingBlobs, putBlobs, readBlobs } from './blobs.repository.js';

/**
 * The blob store's statements on both databases: the contents travel as one bytea parameter cut into
 * rows by offset, and lookups join the digests to the store. Contents of every length (none, one
 * byte, every byte value, one larger than a statement's share) come back byte for byte.
 */
const blob = (content: Buffer) => ({ sha256: createHash('sha256').update(content).digest('hex'), content });

describe.each(testDatabases)('the blob store, on $name', (database) => {
  let db: Db;
  beforeAll(async () => {
    db = await database.open();
  });
  afterAll(() => db.close());

  it('stores contents of any length byte for byte, reports sizes and what is missing, and refuses a key that is not a digest', async () => {
    const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const blobs = [
      blob(Buffer.alloc(0)),
      blob(Buffer.from([0])),
      blob(every),
      blob(Buffer.concat([every, Buffer.from('\\x00,"{}\n')])),
      // Larger than a statement's 8 MiB, so it goes alone in one.
      blob(Buffer.alloc(9 * 1024 * 1024, 0xab)),
      ...Array.from({ length: 300 }, (_, i) => blob(Buffer.from(`blob ${i} `.repeat(i + 1)))),
    ];
    expect(await putBlobs(db.kysely, blobs)).toBe(blobs.length);
    expect(await putBlobs(db.kysely, blobs.slice(0, 10))).toBe(0);

    const back = await readBlobs(
      db.kysely,
      blobs.map((b) => b.sha256),
    );
    expect(back.size).toBe(blobs.length);
    for (const b of blobs) expect(Buffer.from(back.get(b.sha256)!).equals(b.content)).toBe(true);

    const absent = createHash('sha256').update('never stored').digest('hex');
    const sizes = await blobSizes(db.kysely, [blobs[2].sha256, blobs[0].sha256, absent, 'NOT-A-DIGEST', blobs[2].sha256]);
    expect([...sizes].sort()).toEqual(
      [
        [blobs[0].sha256, 0],
        [blobs[2].sha256, 256],
      ].sort(),
    );
    expect(await missingBlobs(db.kysely, [absent, blobs[1].sha256, 'NOT-A-DIGEST'])).toEqual(['NOT-A-DIGEST', absent].sort());
    // Each missing digest once, sorted, however often it was asked; none when all are stored; no query for no digest.
    const absents = Array.from({ length: 50 }, (_, i) => createHash('sha256').update(`absent ${i}`).digest('hex'));
    const asked = [...absents, ...blobs.map((b) => b.sha256), ...absents.slice(0, 10), 'NOT-A-DIGEST'];
    expect(await missingBlobs(db.kysely, asked)).toEqual([...absents, 'NOT-A-DIGEST'].sort());
    expect(await missingBlobs(db.kysely, [...blobs.map((b) => b.sha256), blobs[3].sha256])).toEqual([]);
    expect(await missingBlobs(db.kysely, ['b', 'a', 'b'])).toEqual(['a', 'b']);
    expect(await missingBlobs(db.kysely, [])).toEqual([]);

    // A key that is not a sha256 in lower-case hex is refused, and the batch it came in stores nothing.
    const upper = blob(Buffer.from('upper-case key'));
    const fresh = blob(Buffer.from('stored with it'));
    await expect(putBlobs(db.kysely, [fresh, { ...upper, sha256: upper.sha256.toUpperCase() }])).rejects.toThrow(
      `a blob is keyed "${upper.sha256.toUpperCase()}", not by a sha256 in lower-case hex`,
    );
    expect(await missingBlobs(db.kysely, [fresh.sha256])).toEqual([fresh.sha256]);
  });
});
