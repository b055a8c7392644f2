import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from '#bundle';
import { AgentConfig } from '#contracts';
import { installSet } from './installer.js';
import { StateDir } from './state-dir.js';

const DIGEST = 'a'.repeat(64);

describe('installSet', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'flor-installer-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('installs config artifacts but not resources.json or file-<sha256>: those are host resources', () => {
    const dir = new StateDir(join(root, 'state'));
    dir.ensure();
    const installDir = join(root, 'etc');
    const config = AgentConfig.parse({ install: { dir: installDir } });
    const files = new Map<string, Uint8Array>([
      ['flor.json', Buffer.from('{}\n')],
      ['resources.json', Buffer.from('{"files":[],"packages":[]}\n')],
      [`file-${DIGEST}`, Buffer.from('motd\n')],
    ]);
    const installed = installSet(dir, config, 1, files);
    expect(installed).toEqual([join(installDir, 'flor.json')]);
    expect(readdirSync(installDir)).toEqual(['flor.json']);
    expect(Object.keys(dir.readInstalled().files)).toEqual([join(installDir, 'flor.json')]);
    expect(existsSync(join(installDir, 'resources.json'))).toBe(false);
  });

  describe('from one set to the next', () => {
    let dir: StateDir;
    let installDir: string;
    let config: AgentConfig;
    const set = (files: Record<string, string>) => new Map(Object.entries(files).map(([n, c]) => [n, Buffer.from(c)]));

    beforeEach(() => {
      dir = new StateDir(join(root, 'state'));
      dir.ensure();
      installDir = join(root, 'etc');
      config = AgentConfig.parse({ install: { dir: installDir, paths: { 'agent.json': join(root, 'agent', 'agent.json') } } });
    });

    it('installs an artifact with its own configured path there, and the others in the install folder', () => {
      const installed = installSet(dir, config, 1, set({ 'flor.json': 'f\n', 'agent.json': 'a\n' }));
      expect(installed).toEqual([join(root, 'agent', 'agent.json'), join(installDir, 'flor.json')]);
      expect(readFileSync(join(root, 'agent', 'agent.json'), 'utf8')).toBe('a\n');
      expect(readdirSync(installDir)).toEqual(['flor.json']);
      expect(dir.readInstalled()).toEqual({
        complete_version: 1,
        files: { [join(root, 'agent', 'agent.json')]: sha256Hex('a\n'), [join(installDir, 'flor.json')]: sha256Hex('f\n') },
      });
    });

    it('leaves a file that is already in place alone, and rewrites one changed behind its back', () => {
      installSet(dir, config, 1, set({ 'flor.json': 'f\n', 'other.conf': 'o\n' }));
      const flor = statSync(join(installDir, 'flor.json'));
      writeFileSync(join(installDir, 'other.conf'), 'edited by hand\n');
      installSet(dir, config, 2, set({ 'flor.json': 'f\n', 'other.conf': 'o\n' }));
      expect(statSync(join(installDir, 'flor.json'))).toMatchObject({ ino: flor.ino, mtimeMs: flor.mtimeMs });
      expect(readFileSync(join(installDir, 'other.conf'), 'utf8')).toBe('o\n');
      expect(dir.readInstalled().complete_version).toBe(2);
    });

    it('removes and forgets what it installed before and the set dropped, even when it is already gone; leaves files it never wrote', () => {
      installSet(dir, config, 1, set({ 'flor.json': 'f\n', 'a.conf': 'a\n', 'b.conf': 'b\n' }));
      writeFileSync(join(installDir, 'mine.conf'), "the operator's\n");
      rmSync(join(installDir, 'b.conf'));
      const installed = installSet(dir, config, 2, set({ 'flor.json': 'f\n' }));
      expect(installed).toEqual([join(installDir, 'flor.json')]);
      expect(readdirSync(installDir).sort()).toEqual(['flor.json', 'mine.conf']);
      expect(dir.readInstalled()).toEqual({ complete_version: 2, files: { [join(installDir, 'flor.json')]: sha256Hex('f\n') } });
    });

    it('removes the targets of an interrupted install that it may have written without recording them', () => {
      installSet(dir, config, 1, set({ 'flor.json': 'f\n' }));
      // A crash right after the write, before the record: on disk, not in installed.json.
      mkdirSync(installDir, { recursive: true });
      writeFileSync(join(installDir, 'half.conf'), 'h\n');
      expect(Object.keys(dir.readInstalled().files)).toEqual([join(installDir, 'flor.json')]);
      installSet(dir, config, 2, set({ 'flor.json': 'g\n' }), [join(installDir, 'half.conf'), join(installDir, 'flor.json')]);
      expect(readdirSync(installDir)).toEqual(['flor.json']);
      expect(readFileSync(join(installDir, 'flor.json'), 'utf8')).toBe('g\n');
      expect(dir.readInstalled()).toEqual({ complete_version: 2, files: { [join(installDir, 'flor.json')]: sha256Hex('g\n') } });
    });
  });
});
