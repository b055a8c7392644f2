import { createHash } from 'node:crypto';
import { FILE_ARTIFACT, fileArtifactName, ResourcesJson } from '#contracts';
import { canonicalPretty } from '#bundle';
import { compileRete, type CompiledTree } from './compile.js';
import { formatDiagnostic } from './diagnostics.js';
import { EXAMPLE_RETE } from './example.js';
import type { Source } from './parse-file.js';
import type { ReadSource } from './resolve-resources.js';

/** The example's sources are text; the Source type also allows raw bytes. */
const textOf = (s: Source): string => ('text' in s ? s.text : new TextDecoder().decode(s.bytes));
import { validateRete } from './validate.js';

const sha = (text: string | Uint8Array) => createHash('sha256').update(text).digest('hex');
const example = (): Source[] => Object.entries(EXAMPLE_RETE).map(([file, text]) => ({ file, text }));
const KEY = Uint8Array.from([0x99, 0x01, 0x0d, 0x04, 0xff, 0x00, 0x80]); // not UTF-8: a binary keyring
const readSource: ReadSource = (path) => (path === 'files/florete.gpg' ? { bytes: KEY } : { problem: 'no such file in the rete' });
const compile = (sources: readonly Source[]): CompiledTree => {
  const { rete, diagnostics } = validateRete(sources, readSource);
  if (!rete) throw new Error(diagnostics.map(formatDiagnostic).join('\n'));
  return compileRete(rete);
};

const RESOURCES = `resources:
  - select: { tags: [web] }
    packages:
      - { name: florete-agent, version: 0.2.0-1 }
      - { name: nginx, version: 1.22.1-9+deb12u11 }
    files:
      - path: /etc/apt/sources.list.d/florete.list
        content: "deb [signed-by=/usr/share/keyrings/florete.gpg] https://apt.example.net/ ./\\n"
      - { path: /usr/share/keyrings/florete.gpg, source: files/florete.gpg }
  - select: { nodes: [alpha, beta] }
    files:
      - { path: /etc/motd, content: "managed by florete\\n", mode: "0600", owner: root, group: adm }
      - { path: /etc/issue, content: "managed by florete\\n" }
`;
const withResources = (): Source[] => [...example(), { file: 'resources.yaml', text: RESOURCES }];

describe('compile with resources', () => {
  it('leaves the sets of nodes without resources byte for byte as they were', () => {
    const before = compile(example());
    const after = compile(withResources());
    expect([...after.get('laptop')!]).toEqual([...before.get('laptop')!]);
    for (const node of ['alpha', 'beta']) {
      for (const name of ['agent.json', 'flor.json']) expect(after.get(node)!.get(name)).toBe(before.get(node)!.get(name));
    }
    expect([...before.values()].flatMap((files) => [...files.keys()])).not.toContain('resources.json');
  });

  it('writes resources.json: files, then packages, in declaration order, each file by digest and size', () => {
    const alpha = compile(withResources()).get('alpha')!;
    const list = 'deb [signed-by=/usr/share/keyrings/florete.gpg] https://apt.example.net/ ./\n';
    const motd = 'managed by florete\n';
    const expected = {
      files: [
        { path: '/etc/apt/sources.list.d/florete.list', mode: '0644', owner: 'root', group: 'root', content: { sha256: sha(list), size: list.length } },
        { path: '/usr/share/keyrings/florete.gpg', mode: '0644', owner: 'root', group: 'root', content: { sha256: sha(KEY), size: KEY.length } },
        { path: '/etc/motd', mode: '0600', owner: 'root', group: 'adm', content: { sha256: sha(motd), size: motd.length } },
        { path: '/etc/issue', mode: '0644', owner: 'root', group: 'root', content: { sha256: sha(motd), size: motd.length } },
      ],
      packages: [
        { manager: 'apt', name: 'florete-agent', version: '0.2.0-1' },
        { manager: 'apt', name: 'nginx', version: '1.22.1-9+deb12u11' },
      ],
    };
    const text = alpha.get('resources.json') as string;
    expect(ResourcesJson.parse(JSON.parse(text))).toEqual(expected);
    // Canonical like the other artifacts: sorted keys, two spaces, one trailing newline.
    expect(text).toBe(canonicalPretty(expected));
    expect(text.startsWith('{\n  "files": [\n    {\n      "content": {\n        "sha256": ')).toBe(true);
  });

  it('carries each distinct content once, as raw bytes named after its digest', () => {
    const alpha = compile(withResources()).get('alpha')!;
    const motd = 'managed by florete\n';
    const contents = [...alpha.keys()].filter((n) => FILE_ARTIFACT.test(n)).sort();
    expect(contents).toEqual(
      [
        fileArtifactName(sha(motd)),
        fileArtifactName(sha(KEY)),
        fileArtifactName(sha('deb [signed-by=/usr/share/keyrings/florete.gpg] https://apt.example.net/ ./\n')),
      ].sort(),
    );
    expect(alpha.get(fileArtifactName(sha(KEY)))).toEqual(KEY);
    expect(Buffer.from(alpha.get(fileArtifactName(sha(motd))) as Uint8Array).toString('utf8')).toBe(motd);
    // beta is selected by node name only: the two motd-like files share one artifact.
    expect([...compile(withResources()).get('beta')!.keys()].sort()).toEqual(['agent.json', fileArtifactName(sha(motd)), 'flor.json', 'resources.json']);
  });

  it('is byte-stable: the same rete gives the same bytes, whatever order its files are read in', () => {
    const a = compile(withResources());
    const b = compile([...withResources()].reverse());
    const flat = (tree: CompiledTree) => [...tree].flatMap(([node, files]) => [...files].map(([name, bytes]) => `${node}/${name}:${sha(bytes)}`)).sort();
    expect(flat(b)).toEqual(flat(a));
  });

  it("orders a node's own resources before the selected ones, and selected entries by file path", () => {
    const sources = [
      ...example().map((s) =>
        s.file === 'nodes/devices.yaml'
          ? { ...s, text: `${textOf(s)}    resources:\n      packages: [{ name: own, version: "1" }]\n      files: [{ path: /own, content: "" }]\n` }
          : s,
      ),
      {
        file: 'b.yaml',
        text: 'resources:\n  - select: { nodes: [laptop] }\n    packages: [{ name: from-b, version: "1" }]\n    files: [{ path: /b, content: "" }]\n',
      },
      {
        file: 'a/z.yaml',
        text: 'resources:\n  - select: { groups: [ops] }\n    packages: [{ name: from-a-z, version: "1" }]\n    files: [{ path: /a-z, content: "" }]\n',
      },
    ];
    const json = ResourcesJson.parse(JSON.parse(compile(sources).get('laptop')!.get('resources.json') as string));
    expect(json.files.map((f) => f.path)).toEqual(['/own', '/a-z', '/b']);
    expect(json.packages.map((p) => p.name)).toEqual(['own', 'from-a-z', 'from-b']);
  });

  it("compiles the example's commented-out resources entry once it is uncommented", () => {
    const uncommented = example().map((s) => (s.file === 'rete.yaml' ? { ...s, text: textOf(s).replace(/^# (resources:|  .*)$/gm, '$1') } : s));
    expect(textOf(uncommented.find((s) => s.file === 'rete.yaml')!)).toMatch(/^resources:$/m);
    const { rete, diagnostics } = validateRete(uncommented);
    expect(diagnostics).toEqual([]);
    const tree = compileRete(rete!);
    const json = ResourcesJson.parse(JSON.parse(tree.get('alpha')!.get('resources.json') as string));
    expect(json.files.map((f) => f.path)).toEqual(['/etc/motd']);
    expect(tree.get('beta')!.has('resources.json')).toBe(false);
  });

  it("compiles the example's repository entry once uncommented and the key is in the rete: the source list and the keyring", () => {
    const uncommented = example().map((s) => (s.file === 'repository.yaml' ? { ...s, text: textOf(s).replace(/^# (resources:|  .*)$/gm, '$1') } : s));
    expect(textOf(uncommented.find((s) => s.file === 'repository.yaml')!)).toMatch(/^resources:$/m);
    const tree = compile(uncommented);
    for (const node of ['alpha', 'beta']) {
      const json = ResourcesJson.parse(JSON.parse(tree.get(node)!.get('resources.json') as string));
      expect(json.files.map((f) => [f.path, f.mode])).toEqual([
        ['/etc/apt/sources.list.d/florete.list', '0644'],
        ['/usr/share/keyrings/florete.gpg', '0644'],
      ]);
      const list = 'deb [signed-by=/usr/share/keyrings/florete.gpg] https://coordinator.example.net/repo/debian/ ./\n';
      expect(json.files[0].content).toEqual({ sha256: sha(list), size: list.length });
      expect(json.files[1].content).toEqual({ sha256: sha(KEY), size: KEY.length });
    }
    expect(tree.get('laptop')!.has('resources.json')).toBe(false);
    // Without the key file, the entry names what is missing.
    const { diagnostics } = validateRete(uncommented);
    expect(diagnostics.map(formatDiagnostic).join('\n')).toMatch(/^repository\.yaml:\d+:\d+: .*files\/florete\.gpg/m);
  });

  it('gives a node with packages only a resources.json and no file artifacts', () => {
    const sources = [
      ...example(),
      { file: 'r.yaml', text: 'resources:\n  - select: { tags: [staff] }\n    packages: [{ name: curl, version: 7.88.1-10+deb12u8 }]\n' },
    ];
    expect([...compile(sources).get('laptop')!.keys()]).toEqual(['agent.json', 'flor.json', 'resources.json']);
  });
});
