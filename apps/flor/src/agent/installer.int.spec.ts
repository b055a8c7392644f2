import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
});
