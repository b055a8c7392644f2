import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isTempName, replaceFileUnsynced, writeFileAtomic } from './atomic-write.js';

describe('replacing a file', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'florete-atomic-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ['durably', writeFileAtomic],
    ['without fsync', replaceFileUnsynced],
  ])('%s: creates folders, replaces the whole file with its mode, and leaves no temp file', (_how, write) => {
    const path = join(dir, 'a', 'b', 'flor.json');
    write(path, 'first, and longer\n', 0o600);
    write(path, Buffer.from('second\n'), 0o640);
    expect(readFileSync(path, 'utf8')).toBe('second\n');
    expect(statSync(path).mode & 0o777).toBe(0o640);
    expect(readdirSync(join(dir, 'a', 'b'))).toEqual(['flor.json']);
  });

  it('without fsync: a write that fails removes its temp file and leaves the old file', () => {
    const path = join(dir, 'target');
    writeFileSync(path, 'old');
    // A folder where the temp file's rename would land on a non-empty directory fails the rename.
    const blocked = join(dir, 'blocked');
    replaceFileUnsynced(join(blocked, 'inner'), 'x');
    expect(() => replaceFileUnsynced(blocked, 'new')).toThrow();
    expect(readdirSync(dir).filter(isTempName)).toEqual([]);
    expect(readFileSync(path, 'utf8')).toBe('old');
  });
});
