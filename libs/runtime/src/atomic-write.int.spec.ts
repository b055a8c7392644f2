import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isTempName, replaceFileUnsynced, tempNameFor, writeFileAtomic, writeFileDurable } from './atomic-write.js';

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

  it('names temp files that are all different, past a refill of their random bytes, and all read back as temp names', () => {
    // 4,096 random bytes give 1,024 names; 3,000 draw them three times over.
    const names = Array.from({ length: 3000 }, () => tempNameFor(join(dir, 'flor.json')));
    expect(new Set(names).size).toBe(3000);
    for (const n of names) {
      expect(n.startsWith(join(dir, '.flor.json.tmp-'))).toBe(true);
      expect(isTempName(n.slice(dir.length + 1))).toBe(true);
    }
  });

  it('an exclusive write refuses a name that exists, a planted link among them, and leaves its target alone', () => {
    const target = join(dir, 'elsewhere');
    writeFileSync(target, 'untouched');
    const planted = tempNameFor(join(dir, 'flor.json'));
    symlinkSync(target, planted);
    expect(() => writeFileDurable(planted, 'through the link', 0o644, undefined, 'wx')).toThrow(expect.objectContaining({ code: 'EEXIST' }));
    expect(readFileSync(target, 'utf8')).toBe('untouched');
    expect(lstatSync(planted).isSymbolicLink()).toBe(true);
    // Without the flag, the same write goes through the link: what the temp files no longer do.
    writeFileDurable(planted, 'through the link', 0o644);
    expect(readFileSync(target, 'utf8')).toBe('through the link');
  });
});
