import { entryRefusal } from './blob-archive.js';

const DIGEST = 'a'.repeat(64);

describe('entryRefusal', () => {
  it('lets a plain file named by a digest and within the blob limit through', () => {
    expect(entryRefusal({ name: DIGEST, type: 'file', size: 10 }, 0, 10)).toBeNull();
  });

  it('refuses what is not a file, a name that is not a lowercase digest, and a blob over the limit, naming the entry', () => {
    expect(entryRefusal({ name: DIGEST, type: 'symlink', size: 0 }, 2, 10)).toMatchObject({ code: 'invalid_archive', details: { entry: 3 } });
    expect(entryRefusal({ name: DIGEST.toUpperCase(), type: 'file', size: 1 }, 0, 10)).toMatchObject({ code: 'invalid_archive' });
    expect(entryRefusal({ name: `./${DIGEST}`, type: 'file', size: 1 }, 0, 10)).toMatchObject({ code: 'invalid_archive' });
    expect(entryRefusal({ name: DIGEST, type: 'file', size: 11 }, 4, 10)).toMatchObject({ code: 'body_too_large', details: { entry: 5 } });
  });
});
