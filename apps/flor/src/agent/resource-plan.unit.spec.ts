import type { FileResource, OwnedFiles, ResourcesJson } from '#contracts';
import { AgentError } from '../errors.js';
import { ownPathAt, planResources, refuseUnsupported } from './resource-plan.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const file = (path: string, sha256 = A): FileResource => ({ path, mode: '0644', owner: 'root', group: 'root', content: { sha256, size: 1 } });
const declared = (files: FileResource[], packages: ResourcesJson['packages'] = []): ResourcesJson => ({ files, packages });
const ORIGINAL = { copy: 'c'.repeat(64), mode: 0o600, uid: 0, gid: 0 };
const OWN = ['/var/lib/florete/agent', '/etc/florete', '/etc/florete/agent.yaml'];

describe('planResources', () => {
  it('applies every declared file in declaration order, recorded or not', () => {
    const owned: OwnedFiles = { files: { '/etc/b': { sha256: A, original: null } } };
    expect(planResources(declared([file('/etc/z'), file('/etc/b', B), file('/etc/a')]), owned, OWN)).toEqual([
      { kind: 'apply', resource: file('/etc/z') },
      { kind: 'apply', resource: file('/etc/b', B) },
      { kind: 'apply', resource: file('/etc/a') },
    ]);
  });

  it('removes owned files the set no longer declares, after the applies, restoring an original where one was kept', () => {
    const owned: OwnedFiles = {
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
    const owned: OwnedFiles = { files: { '/etc/a': { sha256: A, original: null }, '/etc/b': { sha256: B, original: ORIGINAL } } };
    const all = [
      { kind: 'remove', path: '/etc/a', original: null },
      { kind: 'remove', path: '/etc/b', original: ORIGINAL },
    ];
    expect(planResources(null, owned, OWN)).toEqual(all);
    expect(planResources(declared([]), owned, OWN)).toEqual(all);
  });

  it('plans nothing when nothing is declared or owned', () => {
    expect(planResources(null, { files: {} }, OWN)).toEqual([]);
  });

  it("refuses, in its place in the order, a file in, over or above the agent's own paths", () => {
    const steps = planResources(declared([file('/etc/ok'), file('/var/lib/florete/agent/state.json'), file('/etc/florete'), file('/var/lib/florete')]), { files: {} }, OWN);
    expect(steps.map((s) => s.kind)).toEqual(['apply', 'refuse', 'refuse', 'refuse']);
    expect(steps[1]).toEqual({ kind: 'refuse', path: '/var/lib/florete/agent/state.json', reason: "/var/lib/florete/agent/state.json would overwrite the agent's own /var/lib/florete/agent" });
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

describe('refuseUnsupported', () => {
  it('refuses a set that declares packages, naming the manager and each package, with a stable code', () => {
    let caught: unknown;
    try {
      refuseUnsupported(declared([file('/etc/a')], [{ manager: 'apt', name: 'florete-agent', version: '0.2.0-1' }, { manager: 'apt', name: 'curl', version: '7.88.1-10' }]), '0.1.0');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AgentError);
    expect((caught as AgentError).code).toBe('unsupported_resource');
    expect((caught as AgentError).message).toContain('(apt)');
    expect((caught as AgentError).message).toContain('florete-agent 0.2.0-1, curl 7.88.1-10');
  });

  it('lets files-only sets and sets without resources through', () => {
    expect(() => refuseUnsupported(declared([file('/etc/a')]), '0.1.0')).not.toThrow();
    expect(() => refuseUnsupported(null, '0.1.0')).not.toThrow();
  });
});
