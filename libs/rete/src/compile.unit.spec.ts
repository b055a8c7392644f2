import fc from 'fast-check';
import { AgentJson, FlorJson, ResourcesJson } from '#contracts';
import { canonicalPretty } from '#bundle';
import { compileRete, type CompiledTree } from './compile.js';
import { EXAMPLE_RETE } from './example.js';
import type { Source } from './parse-file.js';
import { layout, render, reteSpec } from './rete.arbitrary.spec.js';
import { validateRete } from './validate.js';

const compileSources = (sources: readonly Source[]): CompiledTree => {
  const { rete, diagnostics } = validateRete(sources);
  if (!rete) throw new Error(`generated rete does not validate:\n${JSON.stringify(diagnostics, null, 2)}\n${JSON.stringify(sources, null, 2)}`);
  return compileRete(rete);
};
const asObject = (tree: CompiledTree) => Object.fromEntries([...tree].map(([n, files]) => [n, Object.fromEntries(files)]));
const example = (): Source[] => Object.entries(EXAMPLE_RETE).map(([file, text]) => ({ file, text }));

describe('compile', () => {
  it('is deterministic: the same rete compiles to the same bytes every time', () => {
    fc.assert(
      fc.property(reteSpec, layout, (spec, l) => {
        expect(asObject(compileSources(render(spec, l)))).toEqual(asObject(compileSources(render(spec, l))));
      }),
      { numRuns: 150 },
    );
  });

  it('does not depend on the order of keys, of list items that are sets, or of files and folders', () => {
    fc.assert(
      fc.property(reteSpec, layout, layout, (spec, a, b) => {
        expect(asObject(compileSources(render(spec, a)))).toEqual(asObject(compileSources(render(spec, b))));
      }),
      { numRuns: 200 },
    );
  });

  it('round-trips through the contracts: every artifact parses and re-serialises to the same bytes', () => {
    fc.assert(
      fc.property(reteSpec, layout, (spec, l) => {
        for (const [node, files] of compileSources(render(spec, l))) {
          const agent = AgentJson.parse(JSON.parse(files.get('agent.json') as string));
          const flor = FlorJson.parse(JSON.parse(files.get('flor.json') as string));
          expect([agent.node, flor.node]).toEqual([node, node]);
          expect(canonicalPretty(agent)).toBe(files.get('agent.json'));
          expect(canonicalPretty(flor)).toBe(files.get('flor.json'));
          if (files.has('resources.json')) {
            const resources = ResourcesJson.parse(JSON.parse(files.get('resources.json') as string));
            expect(canonicalPretty(resources)).toBe(files.get('resources.json'));
          }
        }
      }),
      { numRuns: 150 },
    );
  });

  it('gives resources.json to exactly the nodes that declare resources, in the order written', () => {
    fc.assert(
      fc.property(reteSpec, layout, (spec, l) => {
        const tree = compileSources(render(spec, l));
        for (const n of spec.nodes) {
          const declared = n.resources as { files: { path: string }[]; packages: { name: string }[] } | undefined;
          const text = tree.get(n.name as string)?.get('resources.json') as string | undefined;
          if (!declared || declared.files.length + declared.packages.length === 0) {
            expect(text).toBeUndefined();
            continue;
          }
          const json = ResourcesJson.parse(JSON.parse(text as string));
          expect(json.files.map((f) => f.path)).toEqual(declared.files.map((f) => f.path));
          expect(json.packages.map((p) => p.name)).toEqual(declared.packages.map((p) => p.name));
        }
      }),
      { numRuns: 100 },
    );
  });

  it('keeps ingress and egress symmetric: a may open b:s exactly when b lets a in on s', () => {
    fc.assert(
      fc.property(reteSpec, layout, (spec, l) => {
        const flors = [...compileSources(render(spec, l))].map(([, f]) => FlorJson.parse(JSON.parse(f.get('flor.json') as string)));
        const egress = new Set(flors.flatMap((f) => f.acl.egress.map((e) => `${f.node}>${e.node}:${e.service}`)));
        const ingress = new Set(flors.flatMap((f) => Object.entries(f.acl.ingress).flatMap(([svc, from]) => from.map((src) => `${src}>${f.node}:${svc}`))));
        expect([...egress].sort()).toEqual([...ingress].sort());
      }),
      { numRuns: 100 },
    );
  });

  it('puts under acl exactly the peers the allow lists name, sorted, each with its listen address', () => {
    fc.assert(
      fc.property(reteSpec, layout, (spec, l) => {
        const listenOf = new Map(spec.nodes.map((n) => [n.name as string, n.listen as string]));
        for (const [, files] of compileSources(render(spec, l))) {
          const { acl, ...rest } = FlorJson.parse(JSON.parse(files.get('flor.json') as string));
          const named = [...new Set([...Object.values(acl.ingress).flat(), ...acl.egress.map((e) => e.node)])].sort();
          expect(acl.peers.map((p) => p.node)).toEqual(named);
          for (const p of acl.peers) expect(p.listen).toBe(listenOf.get(p.node));
          // Nothing that follows from the allow lists is left outside acl.
          expect(Object.keys(rest).sort()).toEqual(['listen', 'mesh', 'node', 'services']);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('compiles the example into the allow lists its ACL rule describes', () => {
    const tree = compileSources(example());
    expect([...tree.keys()]).toEqual(['alpha', 'beta', 'laptop']);
    const flor = (n: string) => FlorJson.parse(JSON.parse(tree.get(n)?.get('flor.json') as string));
    const agent = (n: string) => AgentJson.parse(JSON.parse(tree.get(n)?.get('agent.json') as string));
    expect(flor('alpha').acl).toEqual({
      ingress: { web: ['beta', 'laptop'] },
      egress: [],
      peers: [
        { node: 'beta', listen: '10.0.0.2:7946' },
        { node: 'laptop', listen: '192.168.1.20:7946' },
      ],
    });
    expect(flor('laptop').acl).toEqual({ ingress: {}, egress: [{ node: 'alpha', service: 'web' }], peers: [{ node: 'alpha', listen: '10.0.0.1:7946' }] });
    expect(flor('beta').acl.peers).toEqual([{ node: 'alpha', listen: '10.0.0.1:7946' }]);
    expect(flor('alpha').services).toEqual([{ name: 'web', port: 443, protocol: 'tcp' }]);
    expect(agent('beta')).toEqual({ node: 'beta', mesh: 'example', coordinator: 'https://coordinator.example.net', sync: { poll_interval: 60, splay: 30 } });
    expect(agent('alpha').sync).toEqual({ poll_interval: 300, splay: 30 });
  });

  it('writes sync.watch into agent.json only where the rete turns the watch off', () => {
    const texts = Object.entries(EXAMPLE_RETE).map(([file, text]) => ({ file, text }));
    const sources = texts.map((s) =>
      s.file === 'nodes/servers.yaml'
        ? { ...s, text: s.text.replace('    sync:\n      poll_interval: 1m\n', '    sync:\n      poll_interval: 1m\n      watch: false\n') }
        : s,
    );
    const tree = compileSources(sources);
    const agent = (n: string) => AgentJson.parse(JSON.parse(tree.get(n)?.get('agent.json') as string));
    expect(agent('beta').sync).toEqual({ poll_interval: 60, splay: 30, watch: false });
    // On by default: written as before, so the sets of nodes that watch keep their digests.
    expect(agent('alpha').sync).toEqual({ poll_interval: 300, splay: 30 });
    expect(tree.get('alpha')?.get('agent.json')).toEqual(compileSources(example()).get('alpha')?.get('agent.json'));
    const off = sources.map((s) => (s.file === 'rete.yaml' ? { ...s, text: s.text.replace('    splay: 30s ', '    watch: false\n    splay: 30s ') } : s));
    expect(AgentJson.parse(JSON.parse(compileSources(off).get('alpha')?.get('agent.json') as string)).sync.watch).toBe(false);
  });

  it('writes canonical pretty JSON: sorted keys, two spaces, one trailing newline', () => {
    const text = compileSources(example()).get('beta')?.get('agent.json');
    expect(text).toBe(
      '{\n  "coordinator": "https://coordinator.example.net",\n  "mesh": "example",\n  "node": "beta",\n  "sync": {\n    "poll_interval": 60,\n    "splay": 30\n  }\n}\n',
    );
  });

  it('never lists a node in its own allow lists', () => {
    const sources = [
      ...example().filter((s) => s.file !== 'policy.yaml'),
      { file: 'policy.yaml', text: 'acl:\n  - from: [tag:web, laptop]\n    to: [alpha:web]\n' },
    ];
    const flor = FlorJson.parse(JSON.parse(compileSources(sources).get('alpha')?.get('flor.json') as string));
    expect(flor.acl).toEqual({ ingress: { web: ['laptop'] }, egress: [], peers: [{ node: 'laptop', listen: '192.168.1.20:7946' }] });
  });
});
