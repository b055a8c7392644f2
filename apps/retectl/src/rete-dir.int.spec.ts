import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EXAMPLE_RETE, validateRete } from '#rete';
import { RetectlError } from './errors.js';
import { readSources } from './rete-dir.js';

/** The error readSources throws, for asserting on its code and on the path it names. */
function failure(root: string): RetectlError {
  try {
    readSources(root);
  } catch (e) {
    if (e instanceof RetectlError) return e;
    throw e;
  }
  throw new Error('readSources did not fail');
}

describe('readSources on a real folder', () => {
  let base: string;
  let rete: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  };
  const nodeCount = () => validateRete(readSources(rete)).rete?.nodes.length;

  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'rete-dir-'));
    rete = join(base, 'rete');
    for (const [file, text] of Object.entries(EXAMPLE_RETE)) write(join(rete, file), text);
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('follows a symlink to a file, naming it by the link', () => {
    const shared = join(base, 'shared', 'servers.yaml');
    write(shared, EXAMPLE_RETE['nodes/servers.yaml']);
    rmSync(join(rete, 'nodes/servers.yaml'));
    symlinkSync(shared, join(rete, 'nodes/servers.yaml'));
    expect(
      readSources(rete)
        .map((s) => s.file)
        .sort(),
    ).toEqual(['nodes/devices.yaml', 'nodes/servers.yaml', 'policy.yaml', 'repository.yaml', 'rete.yaml']);
    expect(nodeCount()).toBe(3);
  });

  it('follows a symlink to a folder', () => {
    const shared = join(base, 'shared-nodes');
    mkdirSync(shared);
    for (const f of ['servers.yaml', 'devices.yaml']) write(join(shared, f), EXAMPLE_RETE[`nodes/${f}`]);
    rmSync(join(rete, 'nodes'), { recursive: true });
    symlinkSync(shared, join(rete, 'nodes'));
    expect(
      readSources(rete)
        .map((s) => s.file)
        .sort(),
    ).toEqual(['nodes/devices.yaml', 'nodes/servers.yaml', 'policy.yaml', 'repository.yaml', 'rete.yaml']);
    expect(nodeCount()).toBe(3);
  });

  it('refuses a dangling symlink, naming it', () => {
    rmSync(join(rete, 'nodes/servers.yaml'));
    symlinkSync(join(base, 'gone.yaml'), join(rete, 'nodes/servers.yaml'));
    const e = failure(rete);
    expect(e.code).toBe('io');
    expect(e.message).toContain(join(rete, 'nodes/servers.yaml'));
    expect(e.message).toMatch(/dangling symlink/);
  });

  it('refuses a dangling symlink whatever its name: it may have been a folder of nodes', () => {
    rmSync(join(rete, 'nodes'), { recursive: true });
    symlinkSync(join(base, 'unmounted'), join(rete, 'nodes'));
    expect(failure(rete).message).toContain(join(rete, 'nodes'));
  });

  it('refuses symlinks that point at each other', () => {
    symlinkSync(join(rete, 'b.yaml'), join(rete, 'a.yaml'));
    symlinkSync(join(rete, 'a.yaml'), join(rete, 'b.yaml'));
    const e = failure(rete);
    expect(e.code).toBe('io');
    expect(e.message).toMatch(/symlink loop/);
    expect(e.message).toMatch(/[ab]\.yaml/);
  });

  it('refuses a symlink to a folder that holds it, instead of walking it forever', () => {
    symlinkSync('..', join(rete, 'nodes', 'up'));
    const e = failure(rete);
    expect(e.code).toBe('io');
    expect(e.message).toMatch(/symlink loop/);
    expect(e.message).toContain(join(rete, 'nodes', 'up'));
  });

  it('still skips dot-folders and files that are not YAML', () => {
    write(join(rete, '.flor', 'x.yaml'), 'nodes: [');
    write(join(rete, 'README.md'), '# notes');
    symlinkSync(join(base, 'gone'), join(rete, '.hidden-link'));
    expect(
      readSources(rete)
        .map((s) => s.file)
        .sort(),
    ).toEqual(['nodes/devices.yaml', 'nodes/servers.yaml', 'policy.yaml', 'repository.yaml', 'rete.yaml']);
  });
});
