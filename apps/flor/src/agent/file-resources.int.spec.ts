import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from '#bundle';
import { fileArtifactName, type FileResource, type ResourcesJson } from '#contracts';
import { applyResourceSteps, ResourcePassFailed } from './resource-pass.js';
import { planResources } from './resource-plan.js';
import type { PackageManager } from './package-manager.js';
import { StateDir } from './state-dir.js';
import { systemUserDb } from './user-db.js';

const users = systemUserDb();
/** These sets declare no packages: a package manager the pass must never call. */
const NO_PACKAGES = {
  apt: new Proxy(
    {},
    {
      get: (_t, k) => {
        throw new Error(`a files-only pass used the package manager (${String(k)})`);
      },
    },
  ) as PackageManager,
};
const DAEMON_UID = users.uid('daemon')!;
const NOGROUP_GID = users.gid('nogroup')!;

describe('file resources on the real filesystem', () => {
  let root: string;
  let host: string;
  let dir: StateDir;
  let contents: Map<string, Uint8Array>;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'flor-resources-'));
    host = join(root, 'host');
    dir = new StateDir(join(root, 'state'));
    dir.ensure();
    contents = new Map();
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const file = (rel: string, text: string, more: Partial<FileResource> = {}): FileResource => {
    const bytes = Buffer.from(text);
    const sha256 = sha256Hex(bytes);
    contents.set(fileArtifactName(sha256), bytes);
    return { path: join(host, rel), mode: '0644', owner: 'root', group: 'root', content: { sha256, size: bytes.length }, ...more };
  };
  const pass = (files: FileResource[], own: string[] = [dir.root]) => {
    const declared: ResourcesJson = { files, packages: [] };
    return applyResourceSteps(dir, planResources(declared, dir.readOwned(), own), { contents, users, packageManagers: NO_PACKAGES, sources: [] });
  };
  const failure = async (run: () => Promise<unknown>): Promise<ResourcePassFailed> => {
    try {
      await run();
    } catch (err) {
      if (err instanceof ResourcePassFailed) return err;
      throw err;
    }
    throw new Error('the pass did not fail');
  };
  const meta = (path: string) => {
    const st = statSync(path);
    return { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
  };

  it('writes each file with its mode, owner and group, creating parents, and records it once read back', async () => {
    const motd = file('etc/motd', 'hello\n');
    const secret = file('srv/app/deep/secret.conf', 'k=v\n', { mode: '0640', owner: 'daemon', group: 'nogroup' });
    expect(await pass([motd, secret])).toEqual([
      { kind: 'file', path: motd.path, outcome: 'applied' },
      { kind: 'file', path: secret.path, outcome: 'applied' },
    ]);
    expect(readFileSync(motd.path, 'utf8')).toBe('hello\n');
    expect(meta(motd.path)).toEqual({ mode: 0o644, uid: 0, gid: 0 });
    expect(meta(secret.path)).toEqual({ mode: 0o640, uid: DAEMON_UID, gid: NOGROUP_GID });
    // Parents are made readable whatever the umask.
    expect(statSync(join(host, 'srv/app/deep')).mode & 0o777).toBe(0o755);
    expect(dir.readOwned()).toEqual({
      files: { [motd.path]: { sha256: motd.content.sha256, original: null }, [secret.path]: { sha256: secret.content.sha256, original: null } },
      packages: {},
    });
    // No temp file is left next to them.
    expect(readdirSync(join(host, 'etc'))).toEqual(['motd']);
  });

  it('is idempotent: a file that matches is left alone and reported unchanged; one that drifted is rewritten', async () => {
    const motd = file('etc/motd', 'hello\n');
    const other = file('etc/other', 'x\n');
    await pass([motd, other]);
    const before = statSync(motd.path);
    chmodSync(other.path, 0o600);
    expect(await pass([motd, other])).toEqual([
      { kind: 'file', path: motd.path, outcome: 'unchanged' },
      { kind: 'file', path: other.path, outcome: 'applied' },
    ]);
    expect(statSync(motd.path).ino).toBe(before.ino);
    expect(meta(other.path).mode).toBe(0o644);
  });

  it('removes a file the set no longer declares and forgets it', async () => {
    const motd = file('etc/motd', 'hello\n');
    const gone = file('etc/gone', 'bye\n');
    await pass([motd, gone]);
    expect(await pass([motd])).toEqual([
      { kind: 'file', path: motd.path, outcome: 'unchanged' },
      { kind: 'file', path: gone.path, outcome: 'removed' },
    ]);
    expect(existsSync(gone.path)).toBe(false);
    expect(Object.keys(dir.readOwned().files)).toEqual([motd.path]);
  });

  it('keeps the original of a file it replaces and puts it back, with its mode and owner, on removal', async () => {
    mkdirSync(join(host, 'etc'), { recursive: true });
    const path = join(host, 'etc/issue');
    writeFileSync(path, 'original\n', { mode: 0o600 });
    chmodSync(path, 0o600);
    const issue = file('etc/issue', 'managed\n', { owner: 'daemon', group: 'nogroup' });
    expect(await pass([issue])).toEqual([{ kind: 'file', path, outcome: 'applied' }]);
    expect(readFileSync(path, 'utf8')).toBe('managed\n');
    const entry = dir.readOwned().files[path];
    expect(entry.original).toEqual({ copy: expect.stringMatching(/^[0-9a-f]{64}$/), mode: 0o600, uid: 0, gid: 0 });
    expect(readFileSync(join(dir.originalsDir, entry.original!.copy), 'utf8')).toBe('original\n');

    expect(await pass([])).toEqual([{ kind: 'file', path, outcome: 'removed' }]);
    expect(readFileSync(path, 'utf8')).toBe('original\n');
    expect(meta(path)).toEqual({ mode: 0o600, uid: 0, gid: 0 });
    expect(dir.readOwned()).toEqual({ files: {}, packages: {} });
    expect(readdirSync(dir.originalsDir)).toEqual([]);
  });

  it('resumes after a crash from the store: a written but unrecorded file is recorded without rewriting, keeping its original', async () => {
    mkdirSync(join(host, 'etc'), { recursive: true });
    const first = file('etc/first', 'one\n');
    const second = file('etc/second', 'two\n');
    const third = file('etc/third', 'three\n');
    await pass([first]);
    // The crash hit after `second` was written over an original and before its read-back was recorded;
    // `third` was never reached.
    mkdirSync(dir.originalsDir, { recursive: true });
    writeFileSync(join(dir.originalsDir, 'd'.repeat(64)), 'pre-agent\n');
    const owned = dir.readOwned();
    owned.files[second.path] = { sha256: null, original: { copy: 'd'.repeat(64), mode: 0o644, uid: 0, gid: 0 } };
    dir.writeOwned(owned);
    writeFileSync(second.path, 'two\n');
    chmodSync(second.path, 0o644);
    const inode = statSync(second.path).ino;

    expect(await pass([first, second, third])).toEqual([
      { kind: 'file', path: first.path, outcome: 'unchanged' },
      { kind: 'file', path: second.path, outcome: 'unchanged' },
      { kind: 'file', path: third.path, outcome: 'applied' },
    ]);
    expect(statSync(second.path).ino).toBe(inode);
    expect(dir.readOwned().files[second.path]).toEqual({ sha256: second.content.sha256, original: { copy: 'd'.repeat(64), mode: 0o644, uid: 0, gid: 0 } });
    // The original kept before the crash is what removal restores.
    await pass([first, third]);
    expect(readFileSync(second.path, 'utf8')).toBe('pre-agent\n');
  });

  it('fails at an unknown user, naming it: earlier files stay applied and recorded, later ones are not attempted', async () => {
    const first = file('etc/first', 'one\n');
    const bad = file('etc/bad', 'bad\n', { owner: 'florete-no-such-user' });
    const later = file('etc/later', 'later\n');
    const err = await failure(() => pass([first, bad, later]));
    expect(err.code).toBe('unknown_user');
    expect(err.message).toContain(bad.path);
    expect(err.message).toContain('florete-no-such-user');
    expect(err.resources).toEqual([
      { kind: 'file', path: first.path, outcome: 'applied' },
      { kind: 'file', path: bad.path, outcome: 'failed', error: expect.stringContaining('florete-no-such-user') },
    ]);
    expect(existsSync(bad.path)).toBe(false);
    expect(existsSync(later.path)).toBe(false);
    expect(Object.keys(dir.readOwned().files)).toEqual([first.path]);
  });

  it('fails at an unknown group with its own code', async () => {
    const bad = file('etc/bad', 'bad\n', { group: 'florete-no-such-group' });
    expect((await failure(() => pass([bad]))).code).toBe('unknown_group');
  });

  it("refuses a file in the agent's own paths without writing it", async () => {
    const own = file('state-like/x.conf', 'x\n');
    const err = await failure(() => pass([own], [join(host, 'state-like')]));
    expect(err.code).toBe('refused_resource');
    expect(err.resources).toEqual([{ kind: 'file', path: own.path, outcome: 'failed', error: expect.stringContaining("the agent's own") }]);
    expect(existsSync(own.path)).toBe(false);
    expect(dir.readOwned()).toEqual({ files: {}, packages: {} });
  });

  it('refuses to replace a directory', async () => {
    mkdirSync(join(host, 'etc/conf.d'), { recursive: true });
    const err = await failure(() => pass([file('etc/conf.d', 'x\n')]));
    expect(err.code).toBe('resource_failed');
    expect(err.message).toContain('a directory');
    expect(statSync(join(host, 'etc/conf.d')).isDirectory()).toBe(true);
  });

  it("clears the temp file a killed agent left next to a resource, and leaves a live writer's", async () => {
    mkdirSync(join(host, 'etc'), { recursive: true });
    // A process that has exited, and one still running: another agent of this host, mid-write.
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)']);
    try {
      writeFileSync(join(host, 'etc', `.motd.tmp-${gone}-0badcafe`), 'half a write');
      writeFileSync(join(host, 'etc', `.motd.tmp-${live.pid}-5eedf00d`), 'a write in flight');
      await pass([file('etc/motd', 'hello\n')]);
      expect(readdirSync(join(host, 'etc')).sort()).toEqual([`.motd.tmp-${live.pid}-5eedf00d`, 'motd']);
    } finally {
      live.kill();
    }
  });

  it('deletes a copy of an original that no entry points at any more (a kill after the restore was recorded)', async () => {
    mkdirSync(dir.originalsDir, { recursive: true });
    writeFileSync(join(dir.originalsDir, 'e'.repeat(64)), 'restored already\n');
    await pass([file('etc/motd', 'hello\n')]);
    expect(readdirSync(dir.originalsDir)).toEqual([]);
  });
});
