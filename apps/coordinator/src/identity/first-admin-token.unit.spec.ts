import { lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstAdminTokenLines, writeFirstAdminToken } from './first-admin-token.js';

describe('the first admin token file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'florete-first-token-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is written whole, 0600, into a data dir it creates 0700, with no temp file left', () => {
    const data = join(dir, 'data');
    const written = writeFirstAdminToken(data, 'flt.a.b');
    expect(written).toEqual({ path: join(data, 'first-admin-token'), replaced: false });
    expect(readFileSync(written.path, 'utf8')).toBe('flt.a.b\n');
    expect(statSync(written.path).mode & 0o777).toBe(0o600);
    expect(statSync(data).mode & 0o777).toBe(0o700);
    expect(readdirSync(data)).toEqual(['first-admin-token']);
  });

  it('replaces a file a start left behind without committing its token, and says so', () => {
    writeFileSync(join(dir, 'first-admin-token'), 'flt.old.never-committed\n', { mode: 0o644 });
    const written = writeFirstAdminToken(dir, 'flt.new.one');
    expect(written.replaced).toBe(true);
    expect(readFileSync(written.path, 'utf8')).toBe('flt.new.one\n');
    expect(statSync(written.path).mode & 0o777).toBe(0o600);
  });

  it('never writes through a symlink planted in its place', () => {
    const target = join(dir, 'elsewhere');
    writeFileSync(target, 'untouched\n');
    symlinkSync(target, join(dir, 'first-admin-token'));
    writeFirstAdminToken(dir, 'flt.a.b');
    expect(readFileSync(target, 'utf8')).toBe('untouched\n');
    expect(lstatSync(join(dir, 'first-admin-token')).isFile()).toBe(true);
  });

  it('fails with the path and says no token was created when the data dir cannot hold it', () => {
    const notADir = join(dir, 'file');
    writeFileSync(notADir, '');
    expect(() => writeFirstAdminToken(notADir, 'flt.a.b')).toThrow(`cannot write the first admin token to ${join(notADir, 'first-admin-token')}`);
    expect(() => writeFirstAdminToken(notADir, 'flt.a.b')).toThrow('no token was created');
  });

  it('shows the token only on a terminal, and when it expires either way', () => {
    const written = { path: '/d/first-admin-token', replaced: false };
    const expires = new Date('2027-03-01T10:00:00.000Z');
    const expiry =
      'it expires at 2027-03-01T10:00:00.000Z (FLORETE_API_TOKEN_TTL): before then, make named admin tokens with it (retectl token create --role admin --name <who>)';
    expect(firstAdminTokenLines('flt.s.t', written, true, expires)).toEqual([
      'admin token: flt.s.t',
      '(also in /d/first-admin-token, mode 0600: remove it once the token is stored)',
      expiry,
    ]);
    const piped = firstAdminTokenLines('flt.s.t', written, false, expires);
    expect(piped).toEqual(['first admin token written to /d/first-admin-token (mode 0600): read it there, store it, then remove the file', expiry]);
    expect(piped.join('\n')).not.toContain('flt.s.t');
    expect(firstAdminTokenLines('flt.s.t', written, false, null)[1]).toMatch(
      /^it never expires \(FLORETE_API_TOKEN_TTL=none\): revoke it once named admin tokens exist/,
    );
  });
});
