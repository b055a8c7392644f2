import { OwnedCopy } from '#contracts';
import { adoptOwned, ownedCopyOf, withOwnedCopy } from './owned-recovery.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const copy: OwnedCopy = {
  files: { '/etc/app.conf': { sha256: A, original: false } },
  packages: { hello: { manager: 'apt', version: '1.0', before: null } },
};
const host = (files: Record<string, string | null>, packages: Record<string, { status: string; version: string | null }> = {}) => ({
  files: new Map(Object.entries(files)),
  packages: new Map(Object.entries(packages)),
});
const installed = (version: string) => ({ status: 'installed', version });

describe('taking back a recovery copy into a lost store', () => {
  it('takes back a file whose digest on disk is the reported one, and a package dpkg has at the reported version', () => {
    const a = adoptOwned(copy, host({ '/etc/app.conf': A }, { hello: installed('1.0') }), ['/var/lib/florete']);
    expect(a.owned).toEqual({
      files: { '/etc/app.conf': { sha256: A, original: null } },
      packages: { hello: { manager: 'apt', version: '1.0', before: null } },
    });
    expect(a.left).toEqual([]);
  });

  it('leaves a file whose digest on disk differs from the reported one, or that is gone', () => {
    expect(adoptOwned(copy, host({ '/etc/app.conf': B }, { hello: installed('1.0') }), []).owned.files).toEqual({});
    expect(adoptOwned(copy, host({ '/etc/app.conf': B }), []).left[0]).toEqual({
      resource: 'file /etc/app.conf',
      reason: expect.stringContaining('changed since'),
    });
    expect(adoptOwned(copy, host({ '/etc/app.conf': null }), []).owned.files).toEqual({});
    expect(adoptOwned(copy, host({}), []).owned.files).toEqual({});
  });

  it('leaves a package dpkg has at another version, or not installed', () => {
    expect(adoptOwned(copy, host({ '/etc/app.conf': A }, { hello: installed('1.1') }), []).owned.packages).toEqual({});
    expect(adoptOwned(copy, host({ '/etc/app.conf': A }, { hello: { status: 'config-files', version: '1.0' } }), []).owned.packages).toEqual({});
    expect(adoptOwned(copy, host({ '/etc/app.conf': A }), []).left).toEqual([
      { resource: 'package hello=1.0', reason: 'dpkg says not installed, not installed 1.0' },
    ]);
  });

  it('keeps what dpkg had before the agent, so a package that predates it is forgotten and not removed', () => {
    const pre: OwnedCopy = { files: {}, packages: { pre: { manager: 'apt', version: '1.1', before: { status: 'installed', version: '1.0' } } } };
    expect(adoptOwned(pre, host({}, { pre: installed('1.1') }), []).owned.packages.pre.before).toEqual({ status: 'installed', version: '1.0' });
  });

  it('never takes back a file that replaced one the host had, nor a path of the agent’s own', () => {
    const replaced: OwnedCopy = { files: { '/etc/motd': { sha256: A, original: true }, '/var/lib/florete/x': { sha256: A, original: false } }, packages: {} };
    const a = adoptOwned(replaced, host({ '/etc/motd': A, '/var/lib/florete/x': A }), ['/var/lib/florete']);
    expect(a.owned.files).toEqual({});
    expect(a.left.map((l) => l.resource)).toEqual(['file /etc/motd', 'file /var/lib/florete/x']);
  });

  it('reports only confirmed entries of the record', () => {
    const record = {
      files: { '/a': { sha256: A, original: { copy: B, mode: 0o644, uid: 0, gid: 0 } }, '/b': { sha256: null, original: null } },
      packages: { hello: { manager: 'apt' as const, version: null, before: null }, pre: { manager: 'apt' as const, version: '1.0', before: null } },
    };
    const sent = ownedCopyOf(record);
    expect(sent).toEqual({ files: { '/a': { sha256: A, original: true } }, packages: { pre: { manager: 'apt', version: '1.0', before: null } } });
    expect(OwnedCopy.safeParse(sent).success).toBe(true);
  });

  it('sends the copy with a report only when both fit in one report body', () => {
    const report = { active_version: 2, result: 'applied' as const };
    expect(withOwnedCopy(report, copy)).toEqual({ ...report, owned: copy });
    const many: OwnedCopy = {
      files: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`/srv/app/file-${i}.conf`, { sha256: A, original: false }])),
      packages: {},
    };
    expect(withOwnedCopy(report, many)).toEqual(report);
  });

  it('refuses a malformed copy at the edge', () => {
    const bad = OwnedCopy.safeParse({ files: { 'etc/x': { sha256: 'nope', original: false } }, packages: {} });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => i.path.join('.'))).toEqual(expect.arrayContaining(['files.etc/x']));
  });
});
