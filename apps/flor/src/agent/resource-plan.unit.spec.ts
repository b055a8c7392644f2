import type { FileResource, OwnedFiles, OwnedPackage, PackageResource, ResourcesJson } from '#contracts';
import { isAptSource, parseDpkgStatus, simulatedRemovals } from './apt.js';
import { isInstalledAt, lastLines, sameVersion } from './package-manager.js';
import { beforeOf } from './package-resources.js';
import { declaredSources, ownPathAt, packageRemoval, plannedResources, planResources, stepLabel } from './resource-plan.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const file = (path: string, sha256 = A): FileResource => ({ path, mode: '0644', owner: 'root', group: 'root', content: { sha256, size: 1 } });
const declared = (files: FileResource[], packages: ResourcesJson['packages'] = []): ResourcesJson => ({ files, packages });
const pkg = (name: string, version: string): PackageResource => ({ manager: 'apt', name, version });
const owns = (files: OwnedFiles['files'], packages: OwnedFiles['packages'] = {}): OwnedFiles => ({ files, packages });
const INSTALLED_BY_AGENT: OwnedPackage = { manager: 'apt', version: '1.0', before: null };
const ORIGINAL = { copy: 'c'.repeat(64), mode: 0o600, uid: 0, gid: 0 };
const OWN = ['/var/lib/florete/agent', '/etc/florete', '/etc/florete/agent.yaml'];

describe('planResources', () => {
  it('applies every declared file in declaration order, recorded or not', () => {
    const owned: OwnedFiles = { packages: {}, files: { '/etc/b': { sha256: A, original: null } } };
    expect(planResources(declared([file('/etc/z'), file('/etc/b', B), file('/etc/a')]), owned, OWN)).toEqual([
      { kind: 'apply', resource: file('/etc/z') },
      { kind: 'apply', resource: file('/etc/b', B) },
      { kind: 'apply', resource: file('/etc/a') },
    ]);
  });

  it('removes owned files the set no longer declares, after the applies, restoring an original where one was kept', () => {
    const owned: OwnedFiles = {
      packages: {},
      files: {
        '/etc/kept': { sha256: A, original: null },
        '/etc/motd': { sha256: A, original: ORIGINAL },
        '/etc/gone': { sha256: A, original: null },
        // Written (or about to be) when a crash hit, never read back: still the agent's to clean up.
        '/etc/half': { sha256: null, original: null },
      },
    };
    expect(planResources(declared([file('/etc/kept')]), owned, OWN)).toEqual([
      { kind: 'apply', resource: file('/etc/kept') },
      { kind: 'remove', path: '/etc/gone', original: null },
      { kind: 'remove', path: '/etc/half', original: null },
      { kind: 'remove', path: '/etc/motd', original: ORIGINAL },
    ]);
  });

  it('removes every owned file for a set with no resources or a retired one', () => {
    const owned: OwnedFiles = { packages: {}, files: { '/etc/a': { sha256: A, original: null }, '/etc/b': { sha256: B, original: ORIGINAL } } };
    const all = [
      { kind: 'remove', path: '/etc/a', original: null },
      { kind: 'remove', path: '/etc/b', original: ORIGINAL },
    ];
    expect(planResources(null, owned, OWN)).toEqual(all);
    expect(planResources(declared([]), owned, OWN)).toEqual(all);
  });

  it('plans nothing when nothing is declared or owned', () => {
    expect(planResources(null, owns({}), OWN)).toEqual([]);
  });

  it("refuses, in its place in the order, a file in, over or above the agent's own paths", () => {
    const steps = planResources(
      declared([file('/etc/ok'), file('/var/lib/florete/agent/state.json'), file('/etc/florete'), file('/var/lib/florete')]),
      owns({}),
      OWN,
    );
    expect(steps.map((s) => s.kind)).toEqual(['apply', 'refuse', 'refuse', 'refuse']);
    expect(steps[1]).toEqual({
      kind: 'refuse',
      path: '/var/lib/florete/agent/state.json',
      reason: "/var/lib/florete/agent/state.json would overwrite the agent's own /var/lib/florete/agent",
    });
  });
});

describe('ownPathAt', () => {
  it('matches the path itself, anything under it and any ancestor, not a sibling with the same prefix', () => {
    expect(ownPathAt('/etc/florete', OWN)).toBe('/etc/florete');
    expect(ownPathAt('/etc/florete/x/y', OWN)).toBe('/etc/florete');
    expect(ownPathAt('/var/lib', OWN)).toBe('/var/lib/florete/agent');
    expect(ownPathAt('/etc/florete-other', OWN)).toBeUndefined();
    expect(ownPathAt('/var/lib/floretex', OWN)).toBeUndefined();
  });
});

describe('planResources with packages', () => {
  it('installs declared packages in declaration order, after every declared file', () => {
    const steps = planResources(
      declared([file('/etc/apt/sources.list.d/mesh.list'), file('/etc/b')], [pkg('zed', '2.0'), pkg('alpha', '1.0-1')]),
      owns({}),
      OWN,
    );
    expect(steps).toEqual([
      { kind: 'apply', resource: file('/etc/apt/sources.list.d/mesh.list') },
      { kind: 'apply', resource: file('/etc/b') },
      { kind: 'install', resource: pkg('zed', '2.0') },
      { kind: 'install', resource: pkg('alpha', '1.0-1') },
    ]);
  });

  it('installs a declared package whether or not the store already records it (read-back decides)', () => {
    const owned = owns({}, { alpha: INSTALLED_BY_AGENT, beta: { manager: 'apt', version: null, before: null } });
    expect(planResources(declared([], [pkg('alpha', '1.1'), pkg('beta', '3')]), owned, OWN)).toEqual([
      { kind: 'install', resource: pkg('alpha', '1.1') },
      { kind: 'install', resource: pkg('beta', '3') },
    ]);
  });

  it('removes dropped packages after the installs and before the file removals, by name', () => {
    const owned = owns({ '/etc/gone': { sha256: A, original: null } }, { zed: INSTALLED_BY_AGENT, alpha: INSTALLED_BY_AGENT, kept: INSTALLED_BY_AGENT });
    expect(planResources(declared([file('/etc/a')], [pkg('kept', '1.0')]), owned, OWN)).toEqual([
      { kind: 'apply', resource: file('/etc/a') },
      { kind: 'install', resource: pkg('kept', '1.0') },
      { kind: 'uninstall', manager: 'apt', name: 'alpha', purge: true },
      { kind: 'uninstall', manager: 'apt', name: 'zed', purge: true },
      { kind: 'remove', path: '/etc/gone', original: null },
    ]);
  });

  it('never removes a package that was installed before the agent touched it: it is forgotten, upgraded or not', () => {
    const before = { status: 'installed', version: '0.9' };
    const owned = owns(
      {},
      { pre: { manager: 'apt', version: '1.0', before }, held: { manager: 'apt', version: '2', before: { status: 'half-configured', version: '2' } } },
    );
    expect(planResources(null, owned, OWN)).toEqual([
      { kind: 'forget', manager: 'apt', name: 'held', before: { status: 'half-configured', version: '2' } },
      { kind: 'forget', manager: 'apt', name: 'pre', before },
    ]);
  });

  it('removes every package the agent installed for a retired set, including one a crash left unread-back', () => {
    const owned = owns({}, { a: INSTALLED_BY_AGENT, b: { manager: 'apt', version: null, before: null } });
    expect(planResources(null, owned, OWN).map((s) => s.kind)).toEqual(['uninstall', 'uninstall']);
  });
});

describe('packageRemoval', () => {
  it('purges what the agent installed, removes without purging what had only configuration files left, forgets the rest', () => {
    expect(packageRemoval('apt', 'p', INSTALLED_BY_AGENT)).toEqual({ kind: 'uninstall', manager: 'apt', name: 'p', purge: true });
    expect(packageRemoval('apt', 'p', { manager: 'apt', version: '1', before: { status: 'config-files', version: '0.5' } })).toEqual({
      kind: 'uninstall',
      manager: 'apt',
      name: 'p',
      purge: false,
    });
    expect(packageRemoval('apt', 'p', { manager: 'apt', version: '1', before: { status: 'installed', version: '1' } })).toEqual({
      kind: 'forget',
      manager: 'apt',
      name: 'p',
      before: { status: 'installed', version: '1' },
    });
  });
});

describe('apt sources and read-back', () => {
  it('counts as a source only a .list or .sources file right in the sources folder', () => {
    const dir = '/etc/apt/sources.list.d';
    expect(isAptSource('/etc/apt/sources.list.d/mesh.list', dir)).toBe(true);
    expect(isAptSource('/etc/apt/sources.list.d/mesh.sources', dir)).toBe(true);
    expect(isAptSource('/etc/apt/sources.list.d/mesh.list.disabled', dir)).toBe(false);
    expect(isAptSource('/etc/apt/sources.list.d/sub/mesh.list', dir)).toBe(false);
    expect(isAptSource('/etc/apt/keyrings/mesh.gpg', dir)).toBe(false);
    expect(isAptSource('/etc/apt/sources.list', dir)).toBe(false);
    expect(isAptSource('/etc/apt/sources.list.d/x.list', '/etc/apt/sources.list.d/')).toBe(true);
  });

  it('takes the declared sources in declaration order, nothing else', () => {
    const d = declared([file('/s/b.list'), file('/k/key.gpg'), file('/s/a.sources')]);
    expect(declaredSources(d, (p) => p.startsWith('/s/'))).toEqual(['/s/b.list', '/s/a.sources']);
    expect(declaredSources(null, () => true)).toEqual([]);
  });

  it("parses dpkg-query's status and version", () => {
    expect(parseDpkgStatus('install ok installed 1.22.1-9+deb12u11')).toEqual({ status: 'installed', version: '1.22.1-9+deb12u11' });
    expect(parseDpkgStatus('hold ok installed 2:1.0')).toEqual({ status: 'installed', version: '2:1.0' });
    expect(parseDpkgStatus('deinstall ok config-files 1.0')).toEqual({ status: 'config-files', version: '1.0' });
    expect(parseDpkgStatus('unknown ok not-installed ')).toEqual({ status: 'absent', version: null });
    expect(parseDpkgStatus('install reinstreq half-installed 1.0')).toEqual({ status: 'half-installed', version: '1.0' });
  });

  it('counts a package applied only when installed at exactly the declared version', () => {
    expect(isInstalledAt({ status: 'installed', version: '1.0' }, '1.0')).toBe(true);
    expect(isInstalledAt({ status: 'installed', version: '0:1.0' }, '1.0')).toBe(true);
    expect(isInstalledAt({ status: 'installed', version: '1.0-1' }, '1.0')).toBe(false);
    expect(isInstalledAt({ status: 'half-configured', version: '1.0' }, '1.0')).toBe(false);
    expect(isInstalledAt({ status: 'config-files', version: '1.0' }, '1.0')).toBe(false);
    expect(sameVersion(null, '1.0')).toBe(false);
  });

  it('records what was there before only when something was', () => {
    expect(beforeOf({ status: 'absent', version: null })).toBeNull();
    expect(beforeOf({ status: 'installed', version: '1.0' })).toEqual({ status: 'installed', version: '1.0' });
    expect(beforeOf({ status: 'config-files', version: '0.9' })).toEqual({ status: 'config-files', version: '0.9' });
  });

  it('reads which packages a simulated removal would take with it', () => {
    const out = 'Reading package lists...\nThe following packages will be REMOVED:\n  a* b*\nPurg b [1.0]\nPurg a:amd64 [2.0]\nRemv c [3]\n';
    expect(simulatedRemovals(out)).toEqual(['b', 'a', 'c']);
  });

  it("keeps the last lines of a tool's output, bounded", () => {
    const out = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n') + '\n\n';
    expect(lastLines(out, 3)).toBe('line 37\nline 38\nline 39');
    expect(lastLines('x'.repeat(5000), 3, 100)).toBe(`…${'x'.repeat(100)}`);
  });

  it('names each step for errors', () => {
    expect(stepLabel({ kind: 'install', resource: pkg('hello', '1.0') })).toBe('package resource hello=1.0 (apt)');
    expect(stepLabel({ kind: 'uninstall', manager: 'apt', name: 'hello', purge: true })).toBe('package resource hello (apt)');
    expect(stepLabel({ kind: 'apply', resource: file('/etc/a') })).toBe('file resource /etc/a');
  });
});

describe('plannedResources', () => {
  it('says per step what a real pass would do, a package at its declared version being left as it is', () => {
    const owned = owns(
      { '/etc/old': { sha256: A, original: null } },
      { gone: INSTALLED_BY_AGENT, pre: { manager: 'apt', version: '2', before: { status: 'installed', version: '1' } } },
    );
    const steps = planResources(declared([file('/etc/a'), file('/etc/florete/x')], [pkg('same', '1.0'), pkg('newer', '2.0'), pkg('fresh', '1')]), owned, OWN);
    const installed = new Map([
      ['same', { status: 'installed', version: '1.0' }],
      ['newer', { status: 'installed', version: '1.0' }],
      ['fresh', { status: 'absent', version: null }],
      ['gone', { status: 'installed', version: '1.0' }],
      ['pre', { status: 'installed', version: '2' }],
    ]);
    expect(plannedResources(steps, installed)).toEqual([
      { kind: 'file', path: '/etc/a', action: 'write' },
      { kind: 'file', path: '/etc/florete/x', action: 'refuse' },
      { kind: 'package', manager: 'apt', name: 'same', version: '1.0', action: 'unchanged', installed: '1.0' },
      { kind: 'package', manager: 'apt', name: 'newer', version: '2.0', action: 'install', installed: '1.0' },
      { kind: 'package', manager: 'apt', name: 'fresh', version: '1', action: 'install', installed: null },
      { kind: 'package', manager: 'apt', name: 'gone', version: null, action: 'purge', installed: '1.0' },
      { kind: 'package', manager: 'apt', name: 'pre', version: null, action: 'forget', installed: '2' },
      { kind: 'file', path: '/etc/old', action: 'remove' },
    ]);
  });
});
