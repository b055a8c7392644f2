import fc from 'fast-check';
import { canonicalJson } from '#bundle';
import { FlorJson } from '#contracts';
import { classifyChange, isSwappablePath } from './classify-change.js';
import { acl, florJson, listen, mesh, nodeName, reorderKeys, services } from '../../../test/fixtures/vertex/flor-json.arbitraries.js';

const RUNS = { numRuns: 1000 };
const same = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);
const outsideAcl = (c: FlorJson): unknown => ({ ...c, acl: null });

/** A change to one structural field, possibly together with an allow-list change. */
const structural = fc.oneof(
  nodeName.map((node) => ({ field: 'node', patch: { node } })),
  mesh.map((m) => ({ field: 'mesh', patch: { mesh: m } })),
  listen.map((l) => ({ field: 'listen', patch: { listen: l } })),
  services.map((s) => ({ field: 'services', patch: { services: s } })),
);

describe('classifyChange', () => {
  it('generates configs that are valid flor.json', () => {
    fc.assert(
      fc.property(florJson, (c) => FlorJson.safeParse(c).success),
      { numRuns: 200 },
    );
  });

  it('classifies identical configs as none, whatever the key order', () => {
    fc.assert(
      fc.property(florJson, fc.integer(), fc.integer(), (c, s1, s2) => {
        const r = classifyChange(reorderKeys(c, s1), reorderKeys(structuredClone(c), s2));
        expect(r).toEqual({ kind: 'none', changed: [] });
      }),
      RUNS,
    );
  });

  it('gives the same answer whatever the key order of either side', () => {
    fc.assert(
      fc.property(florJson, florJson, fc.integer(), fc.integer(), (a, b, s1, s2) => {
        expect(classifyChange(reorderKeys(a, s1), reorderKeys(b, s2))).toEqual(classifyChange(a, b));
      }),
      RUNS,
    );
  });

  it('only ever calls swappable a pair that differs in acl and nowhere else', () => {
    fc.assert(
      fc.property(florJson, florJson, (a, b) => {
        const { kind, changed } = classifyChange(a, b);
        const expected = same(a, b) ? 'none' : same(outsideAcl(a), outsideAcl(b)) ? 'swappable' : 'restart';
        expect(kind).toBe(expected);
        expect(changed.length === 0).toBe(kind === 'none');
        if (kind === 'swappable') expect(changed.every(isSwappablePath)).toBe(true);
        if (kind === 'restart') expect(changed.some((p) => !isSwappablePath(p))).toBe(true);
      }),
      RUNS,
    );
  });

  it('swaps any allow-list-only change and names only acl paths', () => {
    fc.assert(
      fc.property(florJson, acl, (c, nextAcl) => {
        const next = { ...c, acl: nextAcl };
        const { kind, changed } = classifyChange(c, next);
        expect(kind).toBe(same(c.acl, nextAcl) ? 'none' : 'swappable');
        for (const p of changed) expect(p.startsWith('acl.')).toBe(true);
      }),
      RUNS,
    );
  });

  it('restarts on any change to node, mesh, listen or services, even alongside an acl change', () => {
    fc.assert(
      fc.property(florJson, structural, fc.option(acl, { nil: undefined }), (c, { field, patch }, nextAcl) => {
        const next: FlorJson = { ...c, ...patch, ...(nextAcl ? { acl: nextAcl } : {}) };
        fc.pre(!same((c as Record<string, unknown>)[field], (next as Record<string, unknown>)[field]));
        const { kind, changed } = classifyChange(c, next);
        expect(kind).toBe('restart');
        expect(changed.some((p) => p === field || p.startsWith(`${field}.`) || p.startsWith(`${field}[`))).toBe(true);
      }),
      RUNS,
    );
  });

  it('names each changed leaf by its path', () => {
    const base: FlorJson = {
      node: 'alpha',
      mesh: 'prod',
      listen: '10.0.0.1:7000',
      services: [{ name: 'web', port: 8080, protocol: 'tcp' }],
      acl: {
        ingress: { web: ['beta', 'gamma'] },
        egress: [],
        peers: [
          { node: 'beta', listen: '10.0.0.2:7000' },
          { node: 'gamma', listen: '10.0.0.3:7000' },
        ],
      },
    };
    expect(classifyChange(base, { ...base, acl: { ...base.acl, ingress: { web: ['beta'] } } })).toEqual({ kind: 'swappable', changed: ['acl.ingress.web[1]'] });
    // A revocation as the compiler writes it: gamma leaves the ingress list and the peers together.
    expect(classifyChange(base, { ...base, acl: { ...base.acl, ingress: { web: ['beta'] }, peers: [base.acl.peers[0]!] } })).toEqual({
      kind: 'swappable',
      changed: ['acl.ingress.web[1]', 'acl.peers[1]'],
    });
    expect(classifyChange(base, { ...base, listen: '10.0.0.1:7001', services: [{ name: 'web', port: 8081, protocol: 'tcp' }] })).toEqual({
      kind: 'restart',
      changed: ['listen', 'services[0].port'],
    });
    expect(classifyChange(base, { ...base, acl: { ...base.acl, ingress: {}, egress: [{ node: 'beta', service: 'web' }] } }).changed).toEqual([
      'acl.egress[0]',
      'acl.ingress.web',
    ]);
  });

  it('does not mistake a top-level field that merely starts with "acl" for the allow lists', () => {
    expect(isSwappablePath('acl.ingress.web')).toBe(true);
    expect(isSwappablePath('aclx')).toBe(false);
    expect(isSwappablePath('peers[0].acl')).toBe(false);
  });
});
